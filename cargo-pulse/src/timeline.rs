//! A failing schedule as a picture: an HTML page with one column per thread and one row
//! per step, so the interleaving that broke the test can be read at a glance (PULSE drew
//! the same with GraphViz). Each object gets its own colour, so the steps that fight over
//! one lock or channel line up visibly. Written next to the failure's JSON.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};

use pulse_protocol::FailureRecord;

/// Writes the timeline of `record`'s trace to `path`.
pub fn write(record: &FailureRecord, path: &Path) -> Result<()> {
    std::fs::write(path, render(record)).with_context(|| format!("writing {}", path.display()))
}

fn render(record: &FailureRecord) -> String {
    let mut threads: Vec<&str> = Vec::new();
    let mut objects: Vec<&str> = Vec::new();
    for step in &record.trace {
        if !threads.contains(&step.thread.as_str()) {
            threads.push(&step.thread);
        }
        if let Some(o) = step.object.as_deref() {
            if !objects.contains(&o) {
                objects.push(o);
            }
        }
    }
    let mut html = String::new();
    let _ = write!(
        html,
        "<!doctype html><meta charset=\"utf-8\"><title>pulse: {test}</title>\n<style>{STYLE}</style>\n\
         <h1>{test}</h1><p class=\"msg\">{message}{location}</p>{details}\
         <p>seed {seed} · schedule <code>{schedule}</code></p>\n<table><tr><th>step</th>",
        test = escape(&record.test),
        message = escape(&headline(record)),
        details = details(record),
        location = record.location.as_deref().map(|l| format!(" <span class=\"loc\">at {}</span>", escape(l))).unwrap_or_default(),
        seed = record.seed.map_or_else(|| "-".to_string(), |s| s.to_string()),
        schedule = escape(&record.schedule),
    );
    for t in &threads {
        let _ = write!(html, "<th>{}</th>", escape(t));
    }
    html.push_str("</tr>\n");
    for step in &record.trace {
        let _ = write!(html, "<tr><td class=\"n\">{}</td>", step.step);
        for t in &threads {
            if *t != step.thread {
                html.push_str("<td></td>");
                continue;
            }
            let hue = step
                .object
                .as_deref()
                .and_then(|o| objects.iter().position(|x| *x == o))
                .map(|i| (i * 137) % 360);
            let style = hue
                .map(|h| format!(" style=\"background:hsl({h},70%,88%)\""))
                .unwrap_or_default();
            let blocks = if step.op.contains("(blocks)") {
                " blocks"
            } else {
                ""
            };
            let _ = write!(
                html,
                "<td class=\"op{blocks}\"{style}><b>{}</b> {}<br><span class=\"loc\">{}</span></td>",
                escape(&step.op),
                escape(step.object.as_deref().unwrap_or("")),
                escape(step.location.as_deref().unwrap_or("")),
            );
        }
        html.push_str("</tr>\n");
    }
    html.push_str("</table>\n");
    html
}

/// The message, prefixed by the failure kind unless it already says it.
fn headline(record: &FailureRecord) -> String {
    let kind = record.kind.title();
    if record.message.starts_with(kind) {
        record.message.clone()
    } else {
        format!("{kind}: {}", record.message)
    }
}

/// The report's detail lines (who waits on what, holding which locks) as a list.
fn details(record: &FailureRecord) -> String {
    let lines = &record.details;
    if lines.is_empty() {
        return String::new();
    }
    let items: String = lines
        .iter()
        .map(|l| format!("<li>{}</li>", escape(l)))
        .collect();
    format!("<ul>{items}</ul>")
}

const STYLE: &str = "body{font:14px system-ui,sans-serif;margin:2em}table{border-collapse:collapse}\
th,td{border:1px solid #ddd;padding:4px 8px;vertical-align:top}th{background:#f4f4f4;position:sticky;top:0}\
td.n{color:#888;text-align:right}td.op{min-width:14em}td.blocks{border:2px solid #c33}\
.loc{color:#666;font-size:12px}.msg{color:#a00;font-weight:600}code{word-break:break-all}";

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use pulse_protocol::{FailureKind, TraceEvent};

    fn step(n: u64, thread: &str, op: &str, object: Option<&str>) -> TraceEvent {
        TraceEvent {
            step: n,
            thread: thread.into(),
            op: op.into(),
            object: object.map(Into::into),
            location: Some("src/lib.rs:3:5".into()),
            ..Default::default()
        }
    }

    #[test]
    fn one_column_per_thread_and_escaped_text() {
        let record = FailureRecord {
            test: "t<1>".into(),
            kind: FailureKind::Deadlock,
            message: "a & b".into(),
            details: vec!["thread 'x' blocked in Mutex::lock".into()],
            trace: vec![
                step(0, "main", "thread::spawn", Some("Thread#1")),
                step(1, "thread-1", "Mutex::lock (blocks)", Some("Mutex#0")),
            ],
            ..Default::default()
        };
        let html = render(&record);
        assert!(html.contains("<th>main</th><th>thread-1</th>"));
        assert!(html.contains("t&lt;1&gt;") && html.contains("deadlock: a &amp; b"));
        assert!(
            html.contains("<li>thread &#39;x&#39; blocked")
                || html.contains("<li>thread 'x' blocked")
        );
        // Step 1 sits in thread-1's column (after main's empty cell) and is marked blocking.
        assert!(html.contains("<tr><td class=\"n\">1</td><td></td><td class=\"op blocks\""));
    }
}
