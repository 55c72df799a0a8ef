"""Pictures of logs and datasets: Set-of-Mark overlays, projected 3D boxes, corruption contact sheets."""
