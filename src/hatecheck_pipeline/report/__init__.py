"""Report layer: the self-contained HTML report and the lineage of its cells."""
