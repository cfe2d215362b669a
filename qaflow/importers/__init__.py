"""Bringing other people's work into a pool: `tb` (Terminal-Bench `task.yaml` tasks as Harbor tasks,
`qaflow import tb`), `harbor_jobs` (Harbor job folders as rollout records, `qaflow import harbor-jobs`;
their ATIF trajectories become chat messages in `atif`) and `attempts` (other solvers' results as
acceptance-gate evidence, `qaflow import attempts`)."""
