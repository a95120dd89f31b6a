//! How the listing commands (`ps`, `goals`, `swarms`) print, as `kubectl get` does:
//! a table (`-o wide` for more columns, `--no-headers`), the objects' names
//! (`-o name`), a `List` as JSON or YAML, or a JSONPath template over that `List`.

use clap::Args;
use clap_complete::{ArgValueCandidates, CompletionCandidate};
use kube::{Resource, ResourceExt};
use serde::Serialize;

use super::jsonpath::Template;
use crate::Result;

/// What `-o` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    Table,
    Wide,
    Name,
    Json,
    Yaml,
    JsonPath(Template),
}

impl std::str::FromStr for Output {
    type Err = crate::Error;

    fn from_str(text: &str) -> Result<Self> {
        Ok(match text {
            "table" => Output::Table,
            "wide" => Output::Wide,
            "name" => Output::Name,
            "json" => Output::Json,
            "yaml" => Output::Yaml,
            other => match other.strip_prefix("jsonpath=") {
                Some(template) => Output::JsonPath(template.parse()?),
                None => {
                    return Err(crate::Error::Usage(format!(
                        "unknown output format {other:?}: one of wide, name, json, yaml, jsonpath=TEMPLATE"
                    )));
                }
            },
        })
    }
}

/// The `-o` values completion offers.
fn output_candidates() -> Vec<CompletionCandidate> {
    ["wide", "name", "json", "yaml", "jsonpath="]
        .into_iter()
        .map(CompletionCandidate::new)
        .collect()
}

/// The flags of every listing command.
#[derive(Args, Debug, Clone)]
pub struct ListArgs {
    /// Every namespace (kubectl's `-A`).
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
    /// wide (more columns), name, json, yaml, or jsonpath=TEMPLATE (kubectl's `-o`).
    #[arg(short, long, value_name = "FORMAT", value_parser = clap::builder::ValueParser::new(|s: &str| s.parse::<Output>()), add = ArgValueCandidates::new(output_candidates))]
    pub output: Option<Output>,
    /// The table without its header line.
    #[arg(long)]
    pub no_headers: bool,
}

impl ListArgs {
    pub fn output(&self) -> Output {
        self.output.clone().unwrap_or(Output::Table)
    }
}

/// A kind as the listing commands print it: its table's rows.
pub trait Listed: Resource<DynamicType = ()> + Serialize + Clone {
    /// The header and the cells of one object; `wide` adds columns at the end.
    fn header(wide: bool) -> Vec<&'static str>;
    fn row(&self, wide: bool, now: jiff::Timestamp) -> Vec<String>;
    /// What the table groups by within a namespace, before the name.
    fn group(&self) -> Option<String> {
        None
    }
}

/// In the table's order: by namespace, group, then name.
pub fn sort<K: Listed>(objects: &mut [K]) {
    objects.sort_by_key(|o| (o.namespace(), o.group(), o.name_any()));
}

/// `objects` as `output` asks, in the table's order. The table has a NAMESPACE column
/// with `all_namespaces`.
pub fn render<K: Listed>(objects: &[K], args: &ListArgs, now: jiff::Timestamp) -> Result<String> {
    let mut sorted = objects.to_vec();
    sort(&mut sorted);
    let objects = &sorted;
    let list = || {
        let items: Vec<K> = objects
            .iter()
            .cloned()
            .map(|mut object| {
                object.meta_mut().managed_fields = None;
                object
            })
            .collect();
        serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items})
    };
    Ok(match args.output() {
        Output::Table => table(objects, args, false, now),
        Output::Wide => table(objects, args, true, now),
        Output::Name => objects
            .iter()
            .map(|o| format!("{}/{}\n", resource_name::<K>(), o.name_any()))
            .collect(),
        Output::Json => format!("{}\n", serde_json::to_string_pretty(&list())?),
        Output::Yaml => crate::yaml::to_string(&list())?,
        Output::JsonPath(template) => template.render(&list()),
    })
}

/// One object that changed, as `kubectl get -w` prints it after the first list: its
/// row (no header), its name, the object as JSON or YAML, or the template over it.
pub fn render_change<K: Listed>(
    object: &K,
    args: &ListArgs,
    now: jiff::Timestamp,
) -> Result<String> {
    let mut object = object.clone();
    object.meta_mut().managed_fields = None;
    Ok(match args.output() {
        Output::Table | Output::Wide => {
            let one = ListArgs {
                no_headers: true,
                ..args.clone()
            };
            table(&[object], &one, args.output() == Output::Wide, now)
        }
        Output::Name => format!("{}/{}\n", resource_name::<K>(), object.name_any()),
        Output::Json => format!("{}\n", serde_json::to_string_pretty(&object)?),
        Output::Yaml => format!("---\n{}", crate::yaml::to_string(&object)?),
        Output::JsonPath(template) => template.render(&serde_json::to_value(&object)?),
    })
}

/// `agent.overseer.dev`: what `kubectl get -o name` prints before the name.
fn resource_name<K: Resource<DynamicType = ()>>() -> String {
    format!("{}.{}", K::kind(&()).to_lowercase(), K::group(&()))
}

fn table<K: Listed>(objects: &[K], args: &ListArgs, wide: bool, now: jiff::Timestamp) -> String {
    let mut rows = Vec::new();
    if !args.no_headers {
        let mut header = vec!["NAMESPACE".to_string()];
        header.extend(K::header(wide).into_iter().map(String::from));
        rows.push(header);
    }
    for object in objects {
        let mut row = vec![object.namespace().unwrap_or_default()];
        row.extend(object.row(wide, now));
        rows.push(row);
    }
    columns(&rows, usize::from(!args.all_namespaces))
}

/// `rows` in aligned columns three spaces apart, the first `skip` columns left out.
/// Every cell loses its control characters: status is partly written by agents, and no
/// escape sequence of theirs may reach a person's terminal (a cursor move or a cleared
/// screen could forge the table).
pub fn columns(rows: &[Vec<String>], skip: usize) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|row| row.iter().map(|cell| printable(cell)).collect())
        .collect();
    let count = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..count)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|cell| cell.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in &rows {
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .skip(skip)
            .map(|(c, cell)| format!("{cell:<width$}", width = widths[c]))
            .collect();
        out.push_str(cells.join("   ").trim_end());
        out.push('\n');
    }
    out
}

/// `cell` with every control character (ESC, CR, BEL, C1 controls) as a space.
fn printable(cell: &str) -> String {
    cell.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// A short age such as `45s`, `12m` or `3h`.
pub fn age(now: jiff::Timestamp, then: jiff::Timestamp) -> String {
    let seconds = now.duration_since(then).as_secs().max(0);
    match seconds {
        s if s < 120 => format!("{s}s"),
        s if s < 7200 => format!("{}m", s / 60),
        s if s < 172_800 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}

/// The API for `K` the listing flags ask for: every namespace, `-n`, or the
/// kubeconfig's namespace.
pub async fn api<K>(namespace: Option<&str>, all_namespaces: bool) -> Result<kube::Api<K>>
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>,
{
    let client =
        crate::kubernetes::timeouts::client(crate::kubernetes::timeouts::ANSWER_DEADLINE).await?;
    Ok(if all_namespaces {
        kube::Api::all(client)
    } else {
        let ns = namespace.map_or_else(|| client.default_namespace().to_string(), String::from);
        kube::Api::namespaced(client, &ns)
    })
}

/// Lists `K` and prints it as `args` ask.
pub async fn list<K>(namespace: Option<&str>, args: &ListArgs) -> Result<()>
where
    K: Listed
        + Resource<Scope = k8s_openapi::NamespaceResourceScope>
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let api = api::<K>(namespace, args.all_namespaces).await?;
    let objects = api.list(&kube::api::ListParams::default()).await?.items;
    print!("{}", render(&objects, args, jiff::Timestamp::now())?);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_formats_parse_as_kubectls() {
        assert_eq!("wide".parse::<Output>().unwrap(), Output::Wide);
        assert_eq!("name".parse::<Output>().unwrap(), Output::Name);
        assert!(matches!(
            "jsonpath={.items[*].metadata.name}".parse::<Output>(),
            Ok(Output::JsonPath(_))
        ));
        let error = "xml".parse::<Output>().unwrap_err().to_string();
        assert!(error.contains("jsonpath=TEMPLATE"), "{error}");
    }

    #[test]
    fn columns_align_and_lose_control_characters() {
        let rows = vec![
            vec!["NS".to_string(), "NAME".into(), "SUMMARY".into()],
            vec!["a".into(), "x".into(), "\x1b[2Jcleared\r".into()],
        ];
        assert_eq!(columns(&rows, 1), "NAME   SUMMARY\nx       [2Jcleared\n");
    }
}
