"""Download pytest 8.4.2 and its dependencies from PyPI (pinned by sha256) and unpack them into the
folder given as the only argument, ready for PYTHONPATH."""

import hashlib
import io
import sys
import urllib.request
import zipfile

FILES = "https://files.pythonhosted.org/packages"
WHEELS = [
    (
        "a8/a4/20da314d277121d6534b3a980b29035dcd51e6744bd79075a6ce8fa4eb8d/pytest-8.4.2-py3-none-any.whl",
        "872f880de3fc3a5bdc88a11b39c9710c3497a547cfa9320bc3c5e62fbf272e79",
    ),
    (
        "54/20/4d324d65cc6d9205fabedc306948156824eb9f0ee1633355a8f7ec5c66bf/pluggy-1.6.0-py3-none-any.whl",
        "e920276dd6813095e9377c0bc5566d94c932c33b27a3e3945d8389c374dd4746",
    ),
    (
        "cb/b1/3846dd7f199d53cb17f49cba7e651e9ce294d8497c8c150530ed11865bb8/iniconfig-2.3.0-py3-none-any.whl",
        "f631c04d2c48c52b84d0d0549c99ff3859c98df65b3101406327ecc7d53fbf12",
    ),
    (
        "63/34/ba1c580383c9eada3711951fef0795c80b829a078d72188184bcab9dd527/packaging-26.3-py3-none-any.whl",
        "d7193f7c8e4e93f444fde0262bf90af30e16fa0ad0ad44cb553c87339b23cd1c",
    ),
    (
        "71/46/17f022dd3e953bf20a04a028a21ec746d942f8d2af30fa0f124fa0e6a684/pygments-2.21.0-py3-none-any.whl",
        "2363c69b61c4a97c838da3b130dcd6468f4848992b21a82f2a63ec34377137d9",
    ),
]

target = sys.argv[1]
for path, sha256 in WHEELS:
    url = f"{FILES}/{path}"
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            data = response.read()
    except OSError as e:
        sys.exit(f"cannot download {url}: {e}")
    if hashlib.sha256(data).hexdigest() != sha256:
        sys.exit(f"{url}: sha256 mismatch")
    zipfile.ZipFile(io.BytesIO(data)).extractall(target)
print(f"pytest 8.4.2 ready in {target}")
