//! What the requests a member writes into its own status share (spawns, merges, claims,
//! escalations): each has a seq, increasing per member, and the operator answers them
//! in that order through the highest seq it has answered.

use crate::kinds::claim::ClaimRequest;
use crate::kinds::merge::MergeRequest;
use crate::kinds::messages::EscalationRequest;
use crate::kinds::spawn::SpawnRequest;

/// A request in a member's status, known by its seq.
pub trait Request {
    fn seq(&self) -> i64;
}

impl Request for SpawnRequest {
    fn seq(&self) -> i64 {
        self.seq
    }
}

impl Request for MergeRequest {
    fn seq(&self) -> i64 {
        self.seq
    }
}

impl Request for ClaimRequest {
    fn seq(&self) -> i64 {
        self.seq
    }
}

impl Request for EscalationRequest {
    fn seq(&self) -> i64 {
        self.seq
    }
}

/// Those of `requests` above `answered`, in seq order: what is left to answer.
pub fn unanswered<R: Request>(requests: &[R], answered: i64) -> Vec<&R> {
    let mut left: Vec<&R> = requests.iter().filter(|r| r.seq() > answered).collect();
    left.sort_by_key(|r| r.seq());
    left
}
