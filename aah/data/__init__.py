"""Where the benchmark data and specs come from: discovery and fetching."""

from aah.data.fetch import FetchReport, Manifest, fetch_data, load_manifest, packaged_manifest
from aah.data.locate import (
    DataLocation,
    failtalms_dir,
    find_data_dir,
    locate_data_dir,
    openapi_dir,
)

__all__ = [
    "DataLocation",
    "FetchReport",
    "Manifest",
    "failtalms_dir",
    "fetch_data",
    "find_data_dir",
    "load_manifest",
    "locate_data_dir",
    "openapi_dir",
    "packaged_manifest",
]
