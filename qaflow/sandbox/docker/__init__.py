"""The docker backend: `backend` (images built, containers started under limits, the `DockerBackend`),
`sandbox` (`DockerSandbox`: exec, files, strays, verifier views), `client` (the shared client and
background remover), `streams` (exec output, capped), `images` (building images, the offline base
image, offline-build tags), `gvisor` (registering runsc with the daemon)."""
