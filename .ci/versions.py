"""Print what a test failure on another machine is compared against: Python, the numerical packages and the BLAS /
LAPACK / OpenMP libraries they load (threadpoolctl). Run by .ci/run and `make versions`."""

from __future__ import annotations

import importlib
import importlib.metadata as md
import os
import platform

PACKAGES = ("numpy", "scipy", "torch", "open3d-cpu", "open3d", "opencv-python-headless", "h5py", "simplejpeg")
LOADED = ("numpy", "scipy.linalg", "torch", "cv2")  # imported so that their native libraries are loaded


def main() -> None:
    print(f"python {platform.python_version()} {platform.machine()} ({platform.platform()})")
    installed = {str(d.metadata["Name"]).lower() for d in md.distributions()}
    for name in PACKAGES:
        if name in installed:
            print(f"{name} {md.version(name)}")
    for module in LOADED:
        try:
            importlib.import_module(module)
        except ImportError:
            pass
    import threadpoolctl

    for lib in threadpoolctl.threadpool_info():
        print(
            f"{lib['user_api']} {lib['internal_api']} {lib.get('version')} {lib.get('architecture', '')} "
            f"threads={lib['num_threads']} {os.path.basename(lib['filepath'])}"
        )
    for var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OMP_NUM_THREADS"):
        if var in os.environ:
            print(f"{var}={os.environ[var]}")


if __name__ == "__main__":
    main()
