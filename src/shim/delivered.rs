//! The delivery ids a shim has confirmed, so that a delivery retried by an operator
//! that lost the answer (it crashed, or its exec stream broke after the typing) is
//! confirmed again without being typed twice. Kept for the shim's life: a new pod has
//! a new shim and a new agent session, which has never seen the message.

use std::collections::VecDeque;

/// Ids kept: far more than the deliveries an operator can have in flight to one pod.
const KEPT: usize = 512;

#[derive(Debug, Default)]
pub struct Delivered {
    ids: VecDeque<String>,
}

impl Delivered {
    /// Whether every one of `ids` was delivered already (never for no ids: a delivery
    /// that names nothing is always typed).
    pub fn all_seen(&self, ids: &[String]) -> bool {
        !ids.is_empty() && ids.iter().all(|id| self.ids.contains(id))
    }

    /// Records `ids` as delivered, forgetting the oldest past `KEPT`.
    pub fn record(&mut self, ids: &[String]) {
        for id in ids {
            if !self.ids.contains(id) {
                self.ids.push_back(id.clone());
            }
        }
        while self.ids.len() > KEPT {
            self.ids.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Delivered, KEPT};

    fn ids(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn a_delivery_is_skipped_only_when_every_id_was_delivered() {
        let mut delivered = Delivered::default();
        delivered.record(&ids(&["send/1", "wake/a/1/1"]));
        let cases: [(&[&str], bool); 5] = [
            (&[], false),
            (&["send/1"], true),
            (&["wake/a/1/1", "send/1"], true),
            (&["wake/a/1/1", "wake/b/1/1"], false),
            (&["send/2"], false),
        ];
        for (asked, skipped) in cases {
            assert_eq!(delivered.all_seen(&ids(asked)), skipped, "{asked:?}");
        }
    }

    #[test]
    fn the_oldest_ids_are_forgotten_past_the_limit() {
        let mut delivered = Delivered::default();
        for n in 0..=KEPT {
            delivered.record(&[format!("send/{n}")]);
        }
        assert!(!delivered.all_seen(&ids(&["send/0"])));
        assert!(delivered.all_seen(&ids(&["send/1"])));
        assert!(delivered.all_seen(&[format!("send/{KEPT}")]));
    }
}
