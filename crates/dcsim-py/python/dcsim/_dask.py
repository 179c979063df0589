"""The Dask client that sweeps and reproductions submit their runs to."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from distributed import Client


@contextmanager
def dask_client(client: Client | str | None, workers: int | None) -> Iterator[Client]:
    """``client`` itself; a Client of the scheduler at the address ``client``; or, with none,
    a LocalCluster of ``workers`` single-threaded worker processes (default: the number of
    cores). What this opens, it closes on leaving."""
    from distributed import Client, LocalCluster

    if client is not None and not isinstance(client, str):
        yield client
        return
    cluster = None
    if client is None:
        cluster = LocalCluster(
            n_workers=workers or os.cpu_count() or 1,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",
        )
    opened = Client(cluster if cluster is not None else client)
    try:
        yield opened
    finally:
        opened.close()
        if cluster is not None:
            cluster.close()
