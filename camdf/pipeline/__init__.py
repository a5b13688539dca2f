"""Config -> stage work: the data and scoring stages, cell assembly and identity, tracking and resolvers."""
