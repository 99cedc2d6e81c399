#!/usr/bin/env python3
"""Prints a cuzk.v1 ProveRequest as grpcurl JSON for one kind of the fixtures `snarkd-bench gen`
wrote: python3 scripts/fixture_request.py FIXTURE_DIR winning|wpost|snap|porep"""
import base64
import json
import os
import sys

directory, kind = sys.argv[1], sys.argv[2]
manifest = json.load(open(os.path.join(directory, "manifest.json")))
entry = manifest[{"winning": "winning", "wpost": "window", "snap": "snap", "porep": "porep"}[kind]]
b64 = lambda path: base64.b64encode(open(os.path.join(directory, path), "rb").read()).decode()
hex_b64 = lambda h: base64.b64encode(bytes.fromhex(h)).decode() if h else ""
submit = {
    "proofKind": {"porep": "POREP_SEAL_COMMIT", "snap": "SNAP_DEALS_UPDATE",
                  "wpost": "WINDOW_POST_PARTITION", "winning": "WINNING_POST"}[kind],
    "registeredProof": entry["registered_proof"],
    "sectorSize": manifest["sector_size"],
    "sectorNumber": manifest["sector_number"],
    "minerId": manifest["miner_id"],
    "randomness": hex_b64(entry.get("randomness", "")),
    "partitionIndex": entry.get("partition_index", 0),
    "commROld": hex_b64(entry.get("comm_r_old", "")),
    "commRNew": hex_b64(entry.get("comm_r_new", "")),
    "commDNew": hex_b64(entry.get("comm_d_new", "")),
}
if kind == "porep":
    submit["vanillaProof"] = b64(entry["files"][0])
else:
    submit["vanillaProofs"] = [b64(f) for f in entry["files"]]
json.dump({"submit": submit}, sys.stdout)
