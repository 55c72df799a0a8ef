"""The environment that keeps every numeric library of a benchmark's child process on one thread (the project's
timing rule: single-threaded on both sides of a comparison). OpenCV reads ``OPENCV_FOR_THREADS_NUM`` for its own
thread pool; the others are the BLAS / OpenMP / numexpr variables."""

from __future__ import annotations

THREAD_ENV = {
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "NUMEXPR_NUM_THREADS": "1",
    "OPENCV_FOR_THREADS_NUM": "1",
}
