"""Packs a repo directory into a snapshot archive in a blob dir; prints `key digest`."""

import hashlib
import io
import os
import sys
import tarfile

repo, blob_dir, commit = sys.argv[1], sys.argv[2], sys.argv[3]
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w:gz") as tar:
    for root, dirs, files in os.walk(repo):
        dirs[:] = sorted(d for d in dirs if d not in (".git", "__pycache__"))
        for name in sorted(files):
            path = os.path.join(root, name)
            tar.add(path, arcname=os.path.relpath(path, repo))
data = buf.getvalue()
key = f"groups/bench/snapshots/{commit}.tar.gz"
os.makedirs(os.path.join(blob_dir, os.path.dirname(key)), exist_ok=True)
with open(os.path.join(blob_dir, key), "wb") as f:
    f.write(data)
print(key, hashlib.sha256(data).hexdigest())
