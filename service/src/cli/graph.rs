//! Dependency graphs drawn for people: around one variable, what it reads and what reads it, as
//! Graphviz DOT, Mermaid or JSON — `sheetd solve … --graph REF` (from a sheet in the
//! process) and `sheetd client explain … --format dot|mermaid|json` (from the daemon's
//! Explain).
//!
//! An edge goes from a variable to one that reads it (`Str → StrMod`): the way values flow.
//! Each node is labelled `ref = value`; the variable asked about is marked.

use std::collections::BTreeSet;
use std::fmt::Write;

/// How a graph is printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Graphviz: `dot -Tsvg`.
    Dot,
    /// Mermaid: a `flowchart LR`, for Markdown that renders it.
    Mermaid,
    /// `{"nodes": [{"ref", "value", "focus"}], "edges": [{"from", "to"}]}`.
    Json,
}

/// A variable drawn: its reference, its value as text, whether it is the one asked about.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub r#ref: String,
    pub value: String,
    pub focus: bool,
}

/// Nodes, and edges `(from, to)`: `to` reads `from`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Graph {
    pub nodes: Vec<Node>,
    pub edges: Vec<(String, String)>,
}

impl Graph {
    /// The graph around `reference` on `sheet`: what it reads and what reads it, transitively,
    /// at most `depth` steps each way.
    pub fn around(sheet: &solver::Sheet, reference: &str, depth: usize) -> Result<Graph, String> {
        let root = sheet.lookup(reference).map_err(|e| e.message.clone())?;
        let name = |v: solver::Var| sheet.name(v).map(|n| n.full_name()).unwrap_or_default();
        let value = |r: &str| match sheet.value(r) {
            Ok(Ok(v)) => v.to_string(),
            Ok(Err(e)) => format!("error: {}", e.code),
            Err(e) => format!("error: {}", e.code),
        };
        let mut g = Graph::default();
        let mut seen = BTreeSet::new();
        let root_name = name(root);
        seen.insert(root_name.clone());
        g.nodes.push(Node { value: value(&root_name), r#ref: root_name, focus: true });
        // Each way, breadth first: what it reads (edges into it), what reads it (out of it).
        for reads in [true, false] {
            let mut frontier = vec![root];
            for _ in 0..depth {
                let mut next = Vec::new();
                for v in frontier {
                    let here = name(v);
                    let near = if reads { sheet.dependencies(v) } else { sheet.dependents(v) };
                    for n in near {
                        let other = name(n);
                        let edge =
                            if reads { (other.clone(), here.clone()) } else { (here.clone(), other.clone()) };
                        if !g.edges.contains(&edge) {
                            g.edges.push(edge);
                        }
                        if seen.insert(other.clone()) {
                            g.nodes.push(Node { value: value(&other), r#ref: other, focus: false });
                            next.push(n);
                        }
                    }
                }
                frontier = next;
            }
        }
        Ok(g)
    }

    /// The graph as `format` prints it.
    pub fn render(&self, format: Format) -> String {
        match format {
            Format::Dot => self.dot(),
            Format::Mermaid => self.mermaid(),
            Format::Json => self.json().to_string(),
        }
    }

    fn dot(&self) -> String {
        let q = |s: &str| format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""));
        let mut out = String::from("digraph dependencies {\n  rankdir=LR;\n  node [shape=box];\n");
        for n in &self.nodes {
            let label = q(&format!("{} = {}", n.r#ref, n.value));
            let style = if n.focus { ", style=bold, peripheries=2" } else { "" };
            let _ = writeln!(out, "  {} [label={label}{style}];", q(&n.r#ref));
        }
        for (a, b) in &self.edges {
            let _ = writeln!(out, "  {} -> {};", q(a), q(b));
        }
        out.push_str("}\n");
        out
    }

    fn mermaid(&self) -> String {
        // Mermaid ids are the nodes' places; labels escape what Mermaid reads as syntax.
        let id = |r: &str| {
            self.nodes.iter().position(|n| n.r#ref == r).map_or_else(String::new, |i| format!("n{i}"))
        };
        let label = |s: &str| s.replace('"', "#quot;").replace('<', "#lt;").replace('>', "#gt;");
        let mut out = String::from("flowchart LR\n");
        for (i, n) in self.nodes.iter().enumerate() {
            let _ = writeln!(out, "  n{i}[\"{} = {}\"]", label(&n.r#ref), label(&n.value));
        }
        for (a, b) in &self.edges {
            let _ = writeln!(out, "  {} --> {}", id(a), id(b));
        }
        if let Some(i) = self.nodes.iter().position(|n| n.focus) {
            let _ = writeln!(out, "  style n{i} stroke-width:3px");
        }
        out
    }

    /// The graph as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "nodes": self.nodes.iter().map(|n| serde_json::json!({"ref": n.r#ref, "value": n.value, "focus": n.focus})).collect::<Vec<_>>(),
            "edges": self.edges.iter().map(|(a, b)| serde_json::json!({"from": a, "to": b})).collect::<Vec<_>>(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> Graph {
        let node = |r: &str, v: &str, focus| Node { r#ref: r.into(), value: v.into(), focus };
        Graph {
            nodes: vec![node("StrMod", "2", true), node("Str", "14", false), node("Attack", "5", false)],
            edges: vec![("Str".into(), "StrMod".into()), ("StrMod".into(), "Attack".into())],
        }
    }

    #[test]
    fn each_format_draws_every_node_and_edge() {
        let g = small();
        let dot = g.render(Format::Dot);
        assert!(dot.starts_with("digraph dependencies {"), "{dot}");
        assert!(dot.contains("\"StrMod\" [label=\"StrMod = 2\", style=bold, peripheries=2];"), "{dot}");
        assert!(dot.contains("\"Str\" -> \"StrMod\";") && dot.contains("\"StrMod\" -> \"Attack\";"), "{dot}");
        let m = g.render(Format::Mermaid);
        assert!(m.starts_with("flowchart LR\n"), "{m}");
        assert!(m.contains("n1[\"Str = 14\"]") && m.contains("n1 --> n0") && m.contains("n0 --> n2"), "{m}");
        assert!(m.contains("style n0 stroke-width:3px"), "{m}");
        let j: serde_json::Value = serde_json::from_str(&g.render(Format::Json)).expect("JSON");
        assert_eq!(j["nodes"][0], serde_json::json!({"ref": "StrMod", "value": "2", "focus": true}));
        assert_eq!(j["edges"][1], serde_json::json!({"from": "StrMod", "to": "Attack"}));
    }

    #[test]
    fn labels_are_escaped() {
        let g = Graph {
            nodes: vec![Node { r#ref: "Name".into(), value: "\"A<b>\"".into(), focus: true }],
            edges: Vec::new(),
        };
        assert!(g.render(Format::Dot).contains("label=\"Name = \\\"A<b>\\\"\""));
        assert!(g.render(Format::Mermaid).contains("n0[\"Name = #quot;A#lt;b#gt;#quot;\"]"));
    }
}
