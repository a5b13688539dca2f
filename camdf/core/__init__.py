"""The method's mathematics on arrays, with no I/O: instances, payoffs, targets, features, membership, folds."""
