"""The consumers of a saved analysis that rebuild it: the exported Python script and replay on new data."""
