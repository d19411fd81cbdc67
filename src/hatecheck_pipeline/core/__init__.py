"""Core layer: configuration, artifact paths, atomic file writers and
readers, the stage model and the code-dependency graph. Imports nothing
else of the package."""
