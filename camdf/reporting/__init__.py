"""Results from the tracking store: the Report renderer, the tables, the figures and the README splice."""
