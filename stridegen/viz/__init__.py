"""Pictures of logs, annotations and datasets (overlays, BEV plots, reports)."""
