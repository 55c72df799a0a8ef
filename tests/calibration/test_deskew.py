"""De-skew: a sweep recorded while the sensor moves is restored to the reference-time sweep (known answer)."""

from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation

from stridegen.calibration.deskew import azimuth_times, deskew_points
from stridegen.core.transforms import invert_transform, make_transform, transform_points


def test_constant_velocity_sweep_is_restored():
    rng = np.random.default_rng(0)
    world = rng.uniform(-40, 40, (3000, 3))  # static points, world frame = sensor frame at the reference time
    dt = 0.1
    delta = make_transform(Rotation.from_rotvec([0, 0, 0.05]).as_matrix(), [1.2, 0.1, 0.0])  # motion over dt
    tau = azimuth_times(world, dt)  # each point's time before the reference (sweep end), from its azimuth
    assert tau.min() >= -dt and tau.max() <= 0.0
    # The sensor at tau sits at exp(tau / dt * log(delta)) (constant velocity), and sees the point there.
    seen = np.empty_like(world)
    for i, (p, t) in enumerate(zip(world, tau, strict=True)):
        pose = make_transform(Rotation.from_rotvec([0, 0, 0.05 * t / dt]).as_matrix(), delta[:3, 3] * t / dt)
        seen[i] = transform_points(invert_transform(pose), p[None])[0]
    restored = deskew_points(seen, tau, delta, dt)
    np.testing.assert_allclose(restored, world, atol=1e-9)
    assert np.abs(seen - world).max() > 0.5  # the distortion was real
