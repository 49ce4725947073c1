"""NVIDIA's driver table as shipped (host/driver-cuda.json, docs/host-facts.md host-7): each row read
from the CUDA Toolkit Release Notes' table 3 and naming its row, the rows increasing in both CUDA and
minimum driver, so a driver maps to one CUDA and a newer driver never to an older CUDA."""

from __future__ import annotations

import re

import pytest

from h3doctor.host import cuda_driver

ROWS = cuda_driver.rows()
NOTES = "https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/"


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split("."))


def test_the_table_increases_in_cuda_and_in_minimum_driver():
    cudas = [_version(r["cuda"]) for r in ROWS]
    drivers = [_version(r["minimum_driver"]) for r in ROWS]
    assert cudas == sorted(cudas) and len(set(cudas)) == len(cudas)
    assert all(a < b for a, b in zip(drivers, drivers[1:])), "a newer CUDA asks a newer driver in every row"


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r["cuda"])
def test_every_row_has_its_source_in_nvidias_table(row):
    # the row's own label in NVIDIA's table: its CUDA minor, its driver as the table writes it
    match = re.fullmatch(re.escape(NOTES) + r" table 3, row 'CUDA (\d+\.\d+)[^']*': >= (\S+)", row["source"])
    assert match, row
    assert match.group(1) == row["cuda"] and match.group(2) == row["minimum_driver"]


def test_the_mapping_follows_the_rows_and_only_the_last_is_open_ended():
    for row in ROWS[:-1]:
        assert cuda_driver.cuda_for_driver(row["minimum_driver"]) == row["cuda"]
    assert cuda_driver.cuda_for_driver(ROWS[-1]["minimum_driver"]) == ROWS[-1]["cuda"] + "+"
