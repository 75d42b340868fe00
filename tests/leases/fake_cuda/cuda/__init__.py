"""A fake of cuda-python for leases tests' subprocesses (no GPU here): put tests/leases/fake_cuda on PYTHONPATH."""
