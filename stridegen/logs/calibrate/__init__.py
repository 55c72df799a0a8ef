"""What ``stridegen calibrate`` measures in a log: the key LiDAR sweeps (``sweeps``), each scene's LiDAR odometry
(``poses``), the ground plane per sweep (``ground``), trajectory alignment of two logs (``align``) and LiDAR-camera
extrinsics (``lidar_camera``); the algorithms themselves are ``stridegen.calibration``'s (arrays in, arrays out).
The ``poses`` command's job (one task per scene on the runner, the log written with the new poses) is
``stridegen.jobs.calibrate``."""
