"""The bubblewrap backend (no Docker): `backend` (`BwrapBackend`: a Dockerfile subset built into a
folder), `sandbox` (`BwrapSandbox`: each exec a bwrap process over that folder), `process` (the pid-1
shim, shared network namespace, output pumps), `rootfs` (the host root a sandbox mounts) and `cgroups`
(limits where the host allows them)."""
