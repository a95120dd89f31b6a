//! Integration tests against the real local control plane (kube-apiserver, etcd,
//! controller-manager, scheduler, kwok). Excluded from the quick `cargo test`;
//! `make test` brings the cluster up and runs them with `--ignored`.

#[path = "../support/mod.rs"]
mod support;

mod agent;
mod api_server;
mod chart;
mod claims;
mod cli;
mod console;
mod crash;
mod escalation;
mod exec;
mod fuzz;
mod gitops;
mod goal;
mod hostile;
mod leader_election;
mod mail;
mod merge;
mod monitor;
mod overseer;
mod prwatch;
mod readers;
mod spawn;
mod swarm;
mod tenancy;
mod variables;
