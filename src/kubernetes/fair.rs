//! Reconcile slots shared fairly: round-robin over namespaces, oldest first within one.
//!
//! kube-runtime bounds a controller's reconciles at once itself, and holds the objects
//! triggered meanwhile in a hash set that it drains in hash order. Under a burst some
//! objects are taken again and again while others wait: at 1,000 Goals started at once
//! a goal's next step waited 69 s while the p99 was under a second (docs/goal.md "At
//! scale"), and one tenant with many objects could starve another's single one. So
//! kube's bound is lifted (it still runs one reconcile per object at a time, and merges
//! the triggers of an object that waits) and each reconcile takes one of these slots
//! first: when one frees it goes to the next namespace in turn that has a reconcile
//! waiting, and within that namespace to the one that has waited longest.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

/// `limit` reconciles at once, shared fairly between namespaces.
pub struct FairSlots {
    state: Mutex<State>,
}

struct State {
    free: usize,
    /// Each namespace's waiting reconciles, oldest first.
    waiting: HashMap<String, VecDeque<oneshot::Sender<()>>>,
    /// The namespaces with a reconcile waiting, in the order they are served.
    turns: VecDeque<String>,
}

/// A slot held; it goes to the next waiter when dropped.
pub struct Slot {
    slots: Arc<FairSlots>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.slots.release();
    }
}

/// A wait for a slot; if given up after the slot was handed to it, the slot is passed on.
struct Waiting {
    slots: Arc<FairSlots>,
    handed: Option<oneshot::Receiver<()>>,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        if let Some(mut handed) = self.handed.take()
            && handed.try_recv().is_ok()
        {
            self.slots.release();
        }
    }
}

impl FairSlots {
    pub fn new(limit: usize) -> Arc<FairSlots> {
        Arc::new(FairSlots {
            state: Mutex::new(State {
                free: limit.max(1),
                waiting: HashMap::new(),
                turns: VecDeque::new(),
            }),
        })
    }

    /// Waits for a slot for a reconcile in `namespace`.
    pub async fn acquire(self: &Arc<Self>, namespace: &str) -> Slot {
        let handed = {
            let mut state = self.lock();
            if state.free > 0 && state.turns.is_empty() {
                state.free -= 1;
                return Slot {
                    slots: self.clone(),
                };
            }
            let (hand, handed) = oneshot::channel();
            let queue = state.waiting.entry(namespace.to_string()).or_default();
            if queue.is_empty() {
                state.turns.push_back(namespace.to_string());
            }
            state
                .waiting
                .get_mut(namespace)
                .expect("just inserted")
                .push_back(hand);
            handed
        };
        let mut waiting = Waiting {
            slots: self.clone(),
            handed: Some(handed),
        };
        if let Some(handed) = waiting.handed.as_mut() {
            // The sender is dropped only with the slots, which this holds: never an error.
            let _ = handed.await;
        }
        waiting.handed = None;
        Slot {
            slots: self.clone(),
        }
    }

    /// Hands a freed slot to the next namespace's oldest waiter still waiting, or keeps it.
    fn release(&self) {
        let mut state = self.lock();
        while let Some(namespace) = state.turns.pop_front() {
            let Some(queue) = state.waiting.get_mut(&namespace) else {
                continue;
            };
            let mut handed = false;
            while let Some(hand) = queue.pop_front() {
                if hand.send(()).is_ok() {
                    handed = true;
                    break;
                }
            }
            if queue.is_empty() {
                state.waiting.remove(&namespace);
            } else {
                state.turns.push_back(namespace);
            }
            if handed {
                return;
            }
        }
        state.free += 1;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Starts a reconcile in `namespace` that records its name when it gets a slot and
    /// holds it until told to finish.
    fn start(
        slots: &Arc<FairSlots>,
        namespace: &'static str,
        name: &'static str,
        served: &Arc<Mutex<Vec<&'static str>>>,
    ) -> (tokio::task::JoinHandle<()>, oneshot::Sender<()>) {
        let (finish, finished) = oneshot::channel::<()>();
        let (slots, served) = (slots.clone(), served.clone());
        let task = tokio::spawn(async move {
            let _slot = slots.acquire(namespace).await;
            served.lock().unwrap().push(name);
            let _ = finished.await;
        });
        (task, finish)
    }

    async fn settle() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    #[tokio::test]
    async fn a_freed_slot_goes_round_the_namespaces_oldest_first_within_each() {
        let slots = FairSlots::new(1);
        let served = Arc::new(Mutex::new(Vec::new()));
        let (first, finish_first) = start(&slots, "busy", "busy-0", &served);
        settle().await;
        // One tenant queues three, then a quiet one queues one.
        let mut running = Vec::new();
        for name in ["busy-1", "busy-2", "busy-3"] {
            running.push(start(&slots, "busy", name, &served));
            settle().await;
        }
        running.push(start(&slots, "quiet", "quiet-0", &served));
        settle().await;
        assert_eq!(*served.lock().unwrap(), ["busy-0"], "one slot");

        let _ = finish_first.send(());
        first.await.unwrap();
        // Each in turn finishes the reconcile that got the slot.
        let mut running: HashMap<&str, _> = ["busy-1", "busy-2", "busy-3", "quiet-0"]
            .into_iter()
            .zip(running)
            .collect();
        while !running.is_empty() {
            settle().await;
            let last = *served.lock().unwrap().last().unwrap();
            let (task, finish) = running.remove(last).expect("served once");
            let _ = finish.send(());
            task.await.unwrap();
        }
        assert_eq!(
            *served.lock().unwrap(),
            ["busy-0", "busy-1", "quiet-0", "busy-2", "busy-3"],
            "the quiet tenant waits for one of the busy one's, not all"
        );
    }

    #[tokio::test]
    async fn a_wait_given_up_passes_its_slot_on_and_none_is_lost() {
        let slots = FairSlots::new(1);
        let held = slots.acquire("team").await;
        let given_up = tokio::spawn({
            let slots = slots.clone();
            async move {
                let _slot = slots.acquire("team").await;
            }
        });
        settle().await;
        given_up.abort();
        let _ = given_up.await;
        drop(held);
        // The slot is free again: taken at once, then once more after it is dropped.
        let again = tokio::time::timeout(Duration::from_secs(1), slots.acquire("other"))
            .await
            .expect("the slot was lost");
        drop(again);
        tokio::time::timeout(Duration::from_secs(1), slots.acquire("team"))
            .await
            .expect("the slot was lost");
    }
}
