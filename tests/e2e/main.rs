//! End-to-end tests on a real node: the operator installed by its Helm chart from its
//! image, agents and steps in real containers under a real kubelet, exec input through
//! it, restricted pod security enforced. Excluded from the quick `cargo test`;
//! `hack/e2e/run.sh` (called by `make test`, and by the kind job in CI) builds and
//! loads the images and runs them with `--ignored`. Each test installs its own
//! release into a namespace of its own, and prints the figures it measured.

#[path = "../support/mod.rs"]
mod support;

mod release;

mod attach;
mod chart;
mod failover;
mod goal;
mod guards;
mod overseer_loop;
mod real_cli;
mod real_team;
mod swarm;
