"""StableToolBench's solvable queries (a folder given as a setting): a real catalog of 2,479 APIs."""
