"""Small shared helpers with no project dependencies: fingerprints, atomic writes, markdown tables, machine facts."""
