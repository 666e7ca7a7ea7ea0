"""Prints, as JSON, the maps.fleetengine.v1 messages and enums defined by the
google-maps-fleetengine PyPI package. Run as a separate process: the package's
descriptors clash with those generated from Protos/ (same message names,
other file names), so the two cannot be loaded into one process."""

import json
import sys

from google.maps.fleetengine_v1.types import (  # noqa: F401
    fleetengine, header, traffic, trip_api, trips, vehicles,
)

import descjson

files = {}
for module in (fleetengine, header, traffic, trip_api, trips, vehicles):
    for name in dir(module):
        cls = getattr(module, name)
        if hasattr(cls, "pb") and hasattr(cls, "meta"):
            fd = cls.pb().DESCRIPTOR.file
            files[fd.name] = fd
json.dump(descjson.normalize(files.values(), "maps.fleetengine.v1"), sys.stdout, indent=1, sort_keys=True)
