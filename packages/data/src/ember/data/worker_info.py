"""``get_worker_info()``: which DataLoader worker this code runs in (``None`` in the main process)."""
__all__ = ["WorkerInfo", "get_worker_info"]


class WorkerInfo:
    pass


def get_worker_info():
    return None
