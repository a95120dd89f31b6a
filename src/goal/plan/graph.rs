//! The goal's steps as a graph of runs: a step runs once, or once per item of its
//! `forEach`; each run waits for every run of the steps it names in `after` (by
//! default the step listed before it). Pure; positions are the order of the spec, so
//! a run's position, its status entry and its pods' names stay the same from one
//! reconcile to the next.

use crate::kinds::goal::{GoalSpec, Step};

/// One run of a step: the step itself, or one item of its `forEach`.
#[derive(Debug, Clone, PartialEq)]
pub struct Run<'a> {
    pub step: &'a Step,
    /// The step's position in the spec.
    pub spec_index: usize,
    /// The step's name, or `<step>.<n>` for its item n (from 1): no step name has a dot.
    pub name: String,
    pub item: Option<&'a str>,
    /// Positions of the runs that must succeed before this one starts.
    pub after: Vec<usize>,
    /// The step's action with its variables (`{{item}}` among them) replaced.
    action: String,
}

impl Run<'_> {
    /// The run's action: the step's, its variables replaced (docs/variables.md).
    pub fn action(&self) -> String {
        self.action.clone()
    }
}

/// The variables of a run's action: the step's name and index, its item (a `forEach`
/// step's), where the earlier results are, the workspace, and the goal's `vars`.
fn variables(spec: &GoalSpec, index: usize, item: Option<&str>) -> crate::variables::Variables {
    let mut builtin = crate::variables::Variables::from([
        ("step".to_string(), spec.steps[index].name.clone()),
        ("stepIndex".to_string(), index.to_string()),
        ("results".to_string(), crate::step::RESULTS_FILE.to_string()),
        ("workspace".to_string(), crate::workspace::DIR.to_string()),
    ]);
    if let Some(item) = item {
        builtin.insert("item".into(), item.to_string());
    }
    crate::variables::with_user(builtin, &spec.vars)
}

/// Step `index`'s action for `item`, or why it cannot be expanded.
fn action(spec: &GoalSpec, index: usize, item: Option<&str>) -> Result<String, String> {
    crate::variables::expand(&spec.steps[index].action, &variables(spec, index, item))
        .map_err(|unknown| unknown.describe(&format!("spec.steps[{index}].action")))
}

/// The runs of `spec`'s steps in the order of the spec, or why the steps do not make a
/// graph (what the API server's rules refuse, for an object stored before them).
pub fn runs(spec: &GoalSpec) -> Result<Vec<Run<'_>>, String> {
    let mut runs: Vec<Run> = Vec::new();
    // The positions of each step's runs, by the step's position.
    let mut of_step: Vec<std::ops::Range<usize>> = Vec::with_capacity(spec.steps.len());
    for (index, step) in spec.steps.iter().enumerate() {
        let after = match &step.after {
            None => of_step.last().cloned().into_iter().flatten().collect(),
            Some(names) => {
                let mut after = Vec::new();
                for name in names {
                    let earlier = spec.steps[..index].iter().position(|s| &s.name == name);
                    let Some(earlier) = earlier else {
                        return Err(format!(
                            "spec.steps[{index}].after names {name}, which is not a step listed before {}",
                            step.name
                        ));
                    };
                    after.extend(of_step[earlier].clone());
                }
                after
            }
        };
        let first = runs.len();
        match &step.for_each {
            Some(items) => {
                for (n, item) in items.iter().enumerate() {
                    runs.push(Run {
                        step,
                        spec_index: index,
                        name: format!("{}.{}", step.name, n + 1),
                        item: Some(item),
                        after: after.clone(),
                        action: action(spec, index, Some(item))?,
                    });
                }
            }
            None => runs.push(Run {
                step,
                spec_index: index,
                name: step.name.clone(),
                item: None,
                after,
                action: action(spec, index, None)?,
            }),
        }
        of_step.push(first..runs.len());
    }
    Ok(runs)
}

/// Whether the runs form one chain (every run after exactly the one before it): such
/// a goal runs as goals always have, one step after the other.
pub fn is_chain(runs: &[Run]) -> bool {
    runs.iter()
        .enumerate()
        .all(|(i, run)| run.after == (i.checked_sub(1).into_iter().collect::<Vec<_>>()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(yaml: &str) -> GoalSpec {
        serde_saphyr::from_str(yaml).unwrap()
    }

    fn graph(yaml: &str) -> Result<Vec<(String, Vec<usize>)>, String> {
        let spec = spec(yaml);
        runs(&spec).map(|runs| runs.into_iter().map(|r| (r.name, r.after)).collect())
    }

    #[test]
    fn steps_become_runs_that_wait_for_their_predecessors() {
        // (case, steps, runs with the positions each waits for)
        type Runs = Vec<(&'static str, Vec<usize>)>;
        let rows: &[(&str, &str, Result<Runs, &str>)] = &[
            (
                "a chain by default",
                "{steps: [{name: a, action: x}, {name: b, action: y}, {name: c, action: z}]}",
                Ok(vec![("a", vec![]), ("b", vec![0]), ("c", vec![1])]),
            ),
            (
                "fan out from one, fan in to one",
                "{steps: [{name: plan, action: x}, {name: left, action: y, after: [plan]}, \
                 {name: right, action: y, after: [plan]}, {name: join, action: z, after: [left, right]}]}",
                Ok(vec![
                    ("plan", vec![]),
                    ("left", vec![0]),
                    ("right", vec![0]),
                    ("join", vec![1, 2]),
                ]),
            ),
            (
                "forEach: one run per item; the next step waits for them all",
                "{steps: [{name: test, action: 'test {{item}}', forEach: [api, web]}, {name: ship, action: z}]}",
                Ok(vec![
                    ("test.1", vec![]),
                    ("test.2", vec![]),
                    ("ship", vec![0, 1]),
                ]),
            ),
            (
                "after: [] starts with the goal",
                "{steps: [{name: a, action: x}, {name: b, action: y, after: []}]}",
                Ok(vec![("a", vec![]), ("b", vec![])]),
            ),
            (
                "an action with a variable that is not defined",
                "{steps: [{name: a, action: 'run {{vars.gates}}'}]}",
                Err(
                    "spec.steps[0].action: the variable {{vars.gates}} is not defined (defined: {{results}}, {{step}}, {{stepIndex}}, {{workspace}})",
                ),
            ),
            (
                "a name not listed before is refused (a cycle, or no such step)",
                "{steps: [{name: a, action: x, after: [b]}, {name: b, action: y}]}",
                Err("spec.steps[0].after names b, which is not a step listed before a"),
            ),
        ];
        for (case, yaml, want) in rows {
            let want = want
                .clone()
                .map(|runs| runs.into_iter().map(|(n, a)| (n.to_string(), a)).collect());
            assert_eq!(graph(yaml), want.map_err(String::from), "{case}");
        }
    }

    #[test]
    fn an_item_is_told_its_item_and_a_chain_is_recognised() {
        let spec = spec(
            "{vars: {gates: make check}, steps: [{name: t, forEach: [api], \
             action: 'test {{item}} now in {{step}} #{{stepIndex}}, then {{vars.gates}}; {{ .x }} stays'}]}",
        );
        let runs = runs(&spec).unwrap();
        assert_eq!(
            runs[0].action(),
            "test api now in t #0, then make check; {{ .x }} stays"
        );
        assert_eq!(runs[0].item, Some("api"));
        assert!(is_chain(&runs));
        let fan = self::spec("{steps: [{name: a, action: x}, {name: b, action: y, after: []}]}");
        assert!(!is_chain(&super::runs(&fan).unwrap()));
    }
}
