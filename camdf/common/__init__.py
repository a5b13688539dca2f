"""Small shared helpers with no project dependencies: content fingerprints and atomic file writes."""
