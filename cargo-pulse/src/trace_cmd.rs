//! `cargo pulse trace FILE`: one execution's trace file (`pulse_protocol::trace::Trace`)
//! drawn for people. `text`: the step list with the failing window marked, one column per
//! thread, and dejafu's compact schedule line; `dot`/`svg`: PULSE's diagram (a lane per
//! thread, synchronisation edges, dotted edges only between conflicting side effects that
//! happens-before leaves unordered: the races); `html`: one self-contained page drawing
//! swimlanes on a canvas (only what is on screen, so 100,000 events stay fluid). The same
//! page is written next to every failure record (it replaced the old table timeline).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};

use pulse_protocol::trace::{
    display_location, EventKind, Trace, OLDEST_TRACE_VERSION, TRACE_VERSION,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TraceFormat {
    Text,
    Dot,
    Svg,
    Html,
}

#[derive(Debug, Args)]
pub struct TraceArgs {
    /// A trace file (`<test>.trace.json`, written next to each failure record).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// What to draw.
    #[arg(long, value_enum, default_value_t = TraceFormat::Text)]
    pub format: TraceFormat,
    /// Write here instead of standard output.
    #[arg(short = 'o', long, value_name = "OUT")]
    pub output: Option<PathBuf>,
}

/// Events around the failing one that the text view marks as its window.
const WINDOW: usize = 12;

pub fn run(args: TraceArgs) -> Result<i32> {
    let trace = read(&args.file)?;
    let out = match args.format {
        TraceFormat::Text => text(&trace),
        TraceFormat::Dot => dot(&trace),
        TraceFormat::Html => html(&trace),
        TraceFormat::Svg => svg(&dot(&trace))?,
    };
    match &args.output {
        Some(path) => {
            std::fs::write(path, out).with_context(|| format!("writing {}", path.display()))?
        }
        None => print!("{out}"),
    }
    Ok(crate::exit_code::SUCCESS)
}

/// Reads and checks a trace file.
pub fn read(path: &Path) -> Result<Trace> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let trace: Trace = serde_json::from_slice(&bytes)
        .with_context(|| format!("{} is not a pulse trace file", path.display()))?;
    if !(OLDEST_TRACE_VERSION..=TRACE_VERSION).contains(&trace.version) {
        bail!(
            "{} is a trace of format version {}; this cargo-pulse reads versions \
             {OLDEST_TRACE_VERSION} to {TRACE_VERSION}",
            path.display(),
            trace.version
        );
    }
    if let Some(bad) = trace
        .events
        .iter()
        .find(|e| e.sync.is_some_and(|s| s as usize >= trace.events.len()))
    {
        bail!(
            "{}: an event names a synchronisation partner past the end (step {})",
            path.display(),
            bad.step
        );
    }
    Ok(trace)
}

/// Writes `trace` (its locations mapped by `map`) as `<base>.trace.json` and the viewer as
/// `<base>.html`; returns the trace file's path.
pub fn write_beside(
    mut trace: Trace,
    base: &Path,
    map: impl Fn(&str) -> String,
) -> Result<PathBuf> {
    map_locations(&mut trace, &map);
    let file = base.with_extension("trace.json");
    std::fs::write(&file, serde_json::to_vec(&trace)?)
        .with_context(|| format!("writing {}", file.display()))?;
    let page = base.with_extension("html");
    std::fs::write(&page, html(&trace)).with_context(|| format!("writing {}", page.display()))?;
    Ok(file)
}

/// Maps the locations of every trace file in `dir` back to the user's files (the harness
/// wrote them with the mirror's paths).
pub fn map_dir(dir: &Path, map: impl Fn(&str) -> String) -> Result<()> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(".trace.json"))
        .collect();
    files.sort();
    for file in files {
        let Ok(mut trace) = read(&file) else {
            continue;
        };
        map_locations(&mut trace, &map);
        std::fs::write(&file, serde_json::to_vec(&trace)?)
            .with_context(|| format!("writing {}", file.display()))?;
    }
    Ok(())
}

fn map_locations(trace: &mut Trace, map: &impl Fn(&str) -> String) {
    for e in &mut trace.events {
        if let Some(l) = &e.location {
            e.location = Some(map(l));
        }
    }
    for t in &mut trace.threads {
        if let Some(l) = &t.spawn_site {
            t.spawn_site = Some(map(l));
        }
    }
}

fn describe(e: &pulse_protocol::trace::Event) -> String {
    let what = match e.kind {
        EventKind::Invoke => return format!("calls {}", e.op),
        EventKind::Response => {
            return format!("{} returns {}", e.op, e.value.as_deref().unwrap_or("?"))
        }
        EventKind::Request => e.op.clone(),
        EventKind::Block => format!("{} (blocks)", e.op),
        EventKind::Wake => format!("{} (wakes)", e.op),
        EventKind::Timeout => format!("{} (times out)", e.op),
        EventKind::Acquire => format!("acquired ({})", e.op),
        EventKind::Release => format!("released ({})", e.op),
        EventKind::Send => "sent".to_string(),
        EventKind::Recv => "received".to_string(),
        EventKind::Join => "joined".to_string(),
        EventKind::Exit => "exits".to_string(),
        _ => match e.order {
            Some(order) => format!("{} ({})", e.op, order.name()),
            None => e.op.clone(),
        },
    };
    match &e.value {
        Some(v) => format!("{what} = {v}"),
        None => what,
    }
}

/// A schedule line longer than a few screen lines (a stress test's 150,000 steps make
/// 150,000 characters) as its start and end, with how many switches it has in all.
fn shortened(line: &str) -> String {
    const HEAD: usize = 240;
    const TAIL: usize = 120;
    let chars: Vec<char> = line.chars().collect();
    if chars.len() <= HEAD + TAIL + 40 {
        return line.to_string();
    }
    let switches = chars.iter().filter(|&&c| c == 'S' || c == 'P').count();
    let head: String = chars[..HEAD].iter().collect();
    let tail: String = chars[chars.len() - TAIL..].iter().collect();
    format!(
        "{head}…{tail} ({} steps, {switches} switches)",
        chars.iter().filter(|&&c| c == '-').count() + switches
    )
}

/// The text view.
pub fn text(trace: &Trace) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "trace of {} ({}{}), {} events, {} threads",
        if trace.test.is_empty() {
            "-"
        } else {
            &trace.test
        },
        trace.outcome,
        if trace.message.is_empty() {
            String::new()
        } else {
            format!(": {}", trace.message)
        },
        trace.events.len(),
        trace.threads.len()
    );
    if trace.dropped > 0 {
        let _ = writeln!(out, "({} earlier events left out)", trace.dropped);
    }
    let _ = writeln!(out, "schedule: {}", shortened(&trace.schedule_line()));
    if let Some(race) = trace.race_summary() {
        let _ = writeln!(out, "race: {race}");
    }
    let fail = trace.failing_event.map(|f| f as usize);
    let races = trace.races();
    let racing: std::collections::BTreeSet<usize> =
        races.iter().flat_map(|e| [e.from, e.to]).collect();
    out.push_str("\nsteps (> the failing window, * the failing event, ! a racing access):\n");
    // Columns as wide as their widest entry (`r2d2-worker-1` is no 10-character name).
    let widest = |f: &dyn Fn(&pulse_protocol::trace::Event) -> usize| {
        trace.events.iter().map(f).max().unwrap_or(0)
    };
    let tw = widest(&|e| trace.thread_name(e.thread).chars().count());
    let dw = widest(&|e| describe(e).chars().count());
    let ow = widest(&|e| e.object.as_deref().map_or(1, |o| o.chars().count()));
    for (i, e) in trace.events.iter().enumerate() {
        let mark = match fail {
            Some(f) if f == i => '*',
            Some(f) if i + WINDOW >= f && i <= f => '>',
            _ => ' ',
        };
        let race = if racing.contains(&i) { '!' } else { ' ' };
        let line = format!(
            "{mark}{race}{i:>6}  {:<tw$} {:<dw$} {:<ow$} {}",
            trace.thread_name(e.thread),
            describe(e),
            e.object.as_deref().unwrap_or("-"),
            shown_location(e)
        );
        out.push_str(line.trim_end());
        out.push('\n');
    }
    // pulse::statem's operations: each command's interval and the events it spans.
    let intervals = trace.intervals();
    if !intervals.is_empty() {
        out.push_str(
            "\noperations (pulse::statem: each command from its call to its return; its events are its thread's in between):\n",
        );
        for iv in &intervals {
            let call = &trace.events[iv.invoke];
            let (ret, span) = match iv.response {
                Some(r) => (
                    trace.events[r].value.as_deref().unwrap_or("?").to_string(),
                    format!(
                        "events {}..{}, steps {}..{}",
                        iv.invoke, r, call.step, trace.events[r].step
                    ),
                ),
                None => (
                    "(never returned)".to_string(),
                    format!("events {}.., step {}..", iv.invoke, call.step),
                ),
            };
            let own = iv.response.map_or(0, |r| {
                trace.events[iv.invoke + 1..r]
                    .iter()
                    .filter(|e| e.thread == iv.thread)
                    .count()
            });
            let _ = writeln!(
                out,
                "  {:<tw$} {:<4} {:<30} -> {:<20} {span} ({own} of its own)",
                trace.thread_name(iv.thread),
                call.object.as_deref().unwrap_or("-"),
                call.op,
                ret,
            );
        }
    }
    // Lincheck's view: one column per thread, a row per event.
    let n = trace.threads.len().max(1);
    let width = (0..n)
        .map(|t| trace.thread_name(t as u32).chars().count())
        .max()
        .unwrap_or(0)
        .max(30);
    out.push_str("\nper thread:\n");
    let mut header = String::from("        ");
    for t in 0..n {
        let _ = write!(header, "| {:<width$}", trace.thread_name(t as u32));
    }
    out.push_str(header.trim_end());
    out.push('\n');
    for (i, e) in trace.events.iter().enumerate() {
        let mut row = format!("{i:>6}  ");
        for t in 0..n {
            let cell = if e.thread as usize == t {
                let mut c = describe(e);
                if let Some(o) = &e.object {
                    c = format!("{c} {o}");
                }
                c.chars().take(width).collect()
            } else {
                String::new()
            };
            let _ = write!(row, "| {cell:<width$}");
        }
        out.push_str(row.trim_end());
        out.push('\n');
    }
    out
}

/// An event's location for people: `after file:line:col` when it had no user's line of its
/// own (a drop, a call from inside std) and this is its thread's last one before it.
fn shown_location(e: &pulse_protocol::trace::Event) -> String {
    match (&e.location, e.location_inferred) {
        (Some(l), true) => format!("after {}", display_location(l)),
        (Some(l), false) => display_location(l),
        (None, _) => "-".to_string(),
    }
}

fn dot_escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// Node labels stay short: the operation and, where it says something, the value.
fn dot_label(e: &pulse_protocol::trace::Event) -> String {
    let mut l = describe(e);
    if let Some(o) = &e.object {
        l.push_str("\\n");
        l.push_str(&dot_escape(o));
    }
    if let Some(loc) = &e.location {
        let short = loc.rsplit('/').next().unwrap_or(loc);
        l.push_str(if e.location_inferred {
            "\\nafter "
        } else {
            "\\n"
        });
        l.push_str(&dot_escape(short));
    }
    l
}

/// PULSE's diagram as Graphviz DOT. Deterministic: nodes and edges in event order.
pub fn dot(trace: &Trace) -> String {
    const COLOURS: [&str; 8] = [
        "#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2",
    ];
    let mut out = String::from(
        "digraph pulse {\n  rankdir=TB;\n  node [shape=box, fontsize=10, style=rounded];\n",
    );
    let _ = writeln!(
        out,
        "  label=\"{} {}\"; labelloc=t;",
        dot_escape(&trace.test),
        dot_escape(&trace.outcome)
    );
    let races = trace.races();
    let racing: std::collections::BTreeSet<usize> =
        races.iter().flat_map(|e| [e.from, e.to]).collect();
    let fail = trace.failing_event.map(|f| f as usize);
    for th in &trace.threads {
        let colour = COLOURS[th.id as usize % COLOURS.len()];
        let _ = writeln!(
            out,
            "  subgraph cluster_t{} {{\n    label=\"{}{}\"; color=\"{colour}\";",
            th.id,
            dot_escape(&th.name),
            th.spawn_site
                .as_deref()
                .map(|s| format!("\\nspawned at {}", dot_escape(&display_location(s))))
                .unwrap_or_default()
        );
        let _ = writeln!(
            out,
            "    t{}_start [shape=triangle, label=\"\", color=\"{colour}\"];",
            th.id
        );
        let mut prev = format!("t{}_start", th.id);
        for (i, e) in trace.events.iter().enumerate() {
            if e.thread != th.id {
                continue;
            }
            let mut attrs = format!("label=\"{}\", color=\"{colour}\"", dot_label(e));
            if Some(i) == fail {
                attrs.push_str(", penwidth=3, style=\"rounded,filled\", fillcolor=\"#ffd6d6\"");
            } else if racing.contains(&i) {
                attrs.push_str(", style=\"rounded,filled\", fillcolor=\"#fff2b3\"");
            }
            let _ = writeln!(out, "    e{i} [{attrs}];");
            let _ = writeln!(out, "    {prev} -> e{i} [color=\"{colour}\"];");
            prev = format!("e{i}");
        }
        let _ = writeln!(
            out,
            "    t{}_end [shape=invtriangle, label=\"\", color=\"{colour}\"];",
            th.id
        );
        let _ = writeln!(
            out,
            "    {prev} -> t{}_end [color=\"{colour}\"];\n  }}",
            th.id
        );
    }
    for e in trace.sync_edges() {
        let _ = writeln!(
            out,
            "  e{} -> e{} [color=gray40, constraint=true, class=sync];",
            e.from, e.to
        );
    }
    for e in trace.waits_for() {
        let _ = writeln!(
            out,
            "  e{} -> e{} [color=red, style=bold, label=\"waits for\", class=waits, constraint=false];",
            e.from, e.to
        );
    }
    for e in &races {
        let _ = writeln!(
            out,
            "  e{} -> e{} [style=dotted, penwidth=2, color=black, class=race];",
            e.from, e.to
        );
    }
    out.push_str("}\n");
    out
}

/// SVG from DOT through Graphviz, when it is installed.
fn svg(dot: &str) -> Result<String> {
    use std::io::Write;
    let child = std::process::Command::new("dot")
        .arg("-Tsvg")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => bail!(
            "--format svg needs Graphviz's `dot`, which is not installed (e.g. `apt-get install graphviz`); \
             `--format dot` writes the graph for it, `--format html` needs nothing"
        ),
        Err(e) => return Err(e).context("starting Graphviz's `dot`"),
    };
    child
        .stdin
        .take()
        .expect("piped stdin")
        .write_all(dot.as_bytes())
        .context("writing to `dot`")?;
    let out = child.wait_with_output().context("running `dot`")?;
    if !out.status.success() {
        bail!(
            "`dot -Tsvg` failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The HTML viewer: the trace inlined as JSON, drawn by a small script on a canvas.
pub fn html(trace: &Trace) -> String {
    // The analysis rides along so the page needs no happens-before code of its own.
    let races = trace.races();
    let sync = trace.sync_edges();
    let waits = trace.waits_for();
    let edges =
        |v: &[pulse_protocol::trace::Edge]| v.iter().map(|e| [e.from, e.to]).collect::<Vec<_>>();
    let intervals: Vec<[Option<usize>; 2]> = trace
        .intervals()
        .iter()
        .map(|iv| [Some(iv.invoke), iv.response])
        .collect();
    let data = serde_json::json!({
        "trace": trace,
        "intervals": intervals,
        "races": edges(&races),
        "sync": edges(&sync),
        "waits": edges(&waits),
        "summary": trace.race_summary(),
        "scheduleLine": trace.schedule_line(),
    });
    let json = data.to_string().replace("</", "<\\/");
    let title = html_escape(&format!("pulse trace: {} ({})", trace.test, trace.outcome));
    format!(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>{title}</title>\n<style>{VIEW_CSS}</style></head>\n<body>\n<header><h1>{title}</h1><p id=\"msg\"></p><p id=\"race\"></p>\n<div id=\"tools\"><button id=\"fit\">whole trace</button><button id=\"fail\">zoom to the failure</button> <span id=\"info\"></span></div></header>\n<canvas id=\"view\"></canvas><div id=\"tip\"></div>\n<script id=\"data\" type=\"application/json\">{json}</script>\n<script>{VIEW_JS}</script>\n</body></html>\n"
    )
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

const VIEW_CSS: &str = "body{font:13px system-ui,sans-serif;margin:0;color:#222}header{padding:8px 12px;border-bottom:1px solid #ccc}\
h1{font-size:16px;margin:0 0 4px}#msg{margin:2px 0;color:#b00}#race{margin:2px 0;font-weight:600}\
canvas{display:block;width:100%;cursor:grab}#tip{position:fixed;pointer-events:none;background:#fffbe6;border:1px solid #999;\
padding:4px 6px;font:12px monospace;white-space:pre;display:none}button{margin-right:6px}";

const VIEW_JS: &str = r#"
"use strict";
const D = JSON.parse(document.getElementById('data').textContent);
const T = D.trace, E = T.events, N = E.length;
const threads = T.threads.length ? T.threads : [{id:0,name:'main'}];
const LANE = D.intervals.length ? 64 : 46, TOP = 28, LEFT = 120;
const COL = ['#d62728','#1f77b4','#2ca02c','#9467bd','#ff7f0e','#17becf','#8c564b','#e377c2'];
const cv = document.getElementById('view'), cx = cv.getContext('2d');
const tip = document.getElementById('tip');
document.getElementById('msg').textContent = (T.outcome || '') + (T.message ? ': ' + T.message : '');
document.getElementById('race').textContent = D.summary ? 'race: ' + D.summary : '';
document.getElementById('info').textContent = N + ' events, ' + threads.length + ' threads, ' +
  D.races.length + ' racing pair(s); schedule ' + (D.scheduleLine.length > 80 ? D.scheduleLine.slice(0, 80) + '…' : D.scheduleLine);
const laneOf = new Map(threads.map((t, i) => [t.id, i]));
// Lock-hold bars: an acquire to the same thread's release of the same object.
const bars = [];
{ const open = new Map();
  for (let i = 0; i < N; i++) { const e = E[i]; const k = e.thread + ' ' + e.object;
    if (e.kind === 'acquire') open.set(k, i);
    else if (e.kind === 'release' && open.has(k)) { bars.push([open.get(k), i, e.thread]); open.delete(k); } }
  for (const [k, i] of open) bars.push([i, N - 1, E[i].thread]); }
const racing = new Set(D.races.flat());
const fail = T.failing_event == null ? -1 : T.failing_event;
let x0 = 0, scale = 1; // event index at the left edge, pixels per event
function resize() { cv.width = cv.clientWidth * devicePixelRatio; cv.height = (TOP + threads.length * LANE + 20) * devicePixelRatio;
  cv.style.height = (TOP + threads.length * LANE + 20) + 'px'; draw(); }
function X(i) { return LEFT + (i - x0) * scale; }
function Y(t) { return TOP + laneOf.get(t) * LANE + LANE / 2; }
function fit() { x0 = -0.5; scale = Math.max((cv.clientWidth - LEFT - 20) / Math.max(N, 1), 0.0005); draw(); }
function zoomFail() { if (fail < 0) return fit(); const w = 40; x0 = Math.max(fail - w + 5, -0.5); scale = (cv.clientWidth - LEFT - 20) / w; draw(); }
function draw() {
  cx.setTransform(devicePixelRatio, 0, 0, devicePixelRatio, 0, 0);
  const W = cv.clientWidth, H = TOP + threads.length * LANE + 20;
  cx.clearRect(0, 0, W, H);
  const lo = Math.max(0, Math.floor(x0 - 1)), hi = Math.min(N - 1, Math.ceil(x0 + (W - LEFT) / scale + 1));
  threads.forEach((t, i) => { cx.fillStyle = i % 2 ? '#fafafa' : '#f0f0f0'; cx.fillRect(0, TOP + i * LANE, W, LANE);
    cx.fillStyle = COL[t.id % COL.length]; cx.font = '12px sans-serif'; cx.fillText(t.name, 6, TOP + i * LANE + LANE / 2 + 4); });
  cx.save(); cx.beginPath(); cx.rect(LEFT - 4, 0, W - LEFT + 4, H); cx.clip();
  for (const [a, b, t] of bars) { if (b < lo || a > hi) continue; cx.fillStyle = 'rgba(31,119,180,0.25)';
    cx.fillRect(X(a), Y(t) - 10, Math.max(X(b) - X(a), 2), 20); }
  // pulse::statem operations: a bar under the lane from the call to the return, labelled.
  for (const [a, r] of D.intervals) { const b = r == null ? N - 1 : r; if (b < lo || a > hi) continue;
    const e = E[a], y = Y(e.thread) + 13; cx.fillStyle = r == null ? 'rgba(214,39,40,0.5)' : 'rgba(44,160,44,0.55)';
    cx.fillRect(X(a), y, Math.max(X(b) - X(a), 2), 7);
    cx.fillStyle = '#1a5e1a'; cx.font = '10px sans-serif';
    cx.fillText((e.object ? e.object + ' ' : '') + e.op + ' → ' + (r == null ? '…' : (E[r].value || '?')), X(a) + 2, y + 16); }
  const arrow = (a, b, colour, dash, width) => { if (Math.max(a, b) < lo || Math.min(a, b) > hi) return;
    cx.strokeStyle = colour; cx.lineWidth = width; cx.setLineDash(dash); cx.beginPath();
    cx.moveTo(X(a), Y(E[a].thread)); cx.lineTo(X(b), Y(E[b].thread)); cx.stroke(); cx.setLineDash([]); };
  if (hi - lo < 20000) { for (const [a, b] of D.sync) arrow(a, b, '#888', [], 1); }
  for (const [a, b] of D.waits) arrow(a, b, '#d00', [], 2);
  for (const [a, b] of D.races) arrow(a, b, '#000', [3, 3], 2);
  const step = Math.max(1, Math.floor(1 / scale));
  for (let i = lo; i <= hi; i += step) { const e = E[i]; const x = X(i), y = Y(e.thread);
    cx.fillStyle = e.kind === 'block' ? '#d00' : e.kind === 'exit' ? '#555' : COL[e.thread % COL.length];
    const r = Math.min(Math.max(scale / 3, 1.5), 6); cx.beginPath(); cx.arc(x, y, r, 0, 7); cx.fill();
    if (racing.has(i)) { cx.strokeStyle = '#e6a800'; cx.lineWidth = 3; cx.beginPath(); cx.arc(x, y, r + 3, 0, 7); cx.stroke(); }
    if (scale > 40) { cx.fillStyle = '#333'; cx.font = '10px sans-serif'; cx.fillText(e.op.slice(0, Math.floor(scale / 6)), x - scale / 2 + 2, y - 12); } }
  if (fail >= lo && fail <= hi) { const x = X(fail), y = Y(E[fail].thread); cx.strokeStyle = '#d00'; cx.lineWidth = 2;
    cx.strokeRect(x - 9, y - 9, 18, 18); cx.fillStyle = '#d00'; cx.font = 'bold 11px sans-serif'; cx.fillText('failure', x + 11, y - 10); }
  cx.restore();
  cx.fillStyle = '#333'; cx.font = '11px sans-serif'; cx.fillText('events ' + lo + '–' + hi + ' of ' + N, LEFT, 14);
}
function at(mx, my) { const i = Math.round(x0 + (mx - LEFT) / scale); if (i < 0 || i >= N) return -1;
  const lane = Math.floor((my - TOP) / LANE); const e = E[i]; return laneOf.get(e.thread) === lane ? i : -1; }
cv.addEventListener('mousemove', ev => { const r = cv.getBoundingClientRect(); if (drag) { x0 = drag.x0 - (ev.clientX - drag.x) / scale; draw(); return; }
  const i = at(ev.clientX - r.left, ev.clientY - r.top);
  if (i < 0) { tip.style.display = 'none'; return; } const e = E[i];
  tip.textContent = '#' + i + ' step ' + e.step + '  ' + (T.threads.find(t => t.id === e.thread) || {name: e.thread}).name + '\n' +
    e.kind + ' ' + e.op + (e.object ? ' ' + e.object : '') + (e.value ? ' = ' + e.value : '') + '\n' + (e.location ? (e.location_inferred ? 'after ' : '') + e.location : '-') +
    '\nt=' + e.clock_ns + 'ns' + (racing.has(i) ? '\nracing access' : '') + (i === fail ? '\nFAILING EVENT' : '');
  tip.style.display = 'block'; tip.style.left = (ev.clientX + 12) + 'px'; tip.style.top = (ev.clientY + 12) + 'px'; });
let drag = null;
cv.addEventListener('mousedown', ev => { drag = {x: ev.clientX, x0}; });
window.addEventListener('mouseup', () => { drag = null; });
cv.addEventListener('wheel', ev => { ev.preventDefault(); const r = cv.getBoundingClientRect(); const mx = ev.clientX - r.left;
  const i = x0 + (mx - LEFT) / scale; scale *= ev.deltaY < 0 ? 1.25 : 0.8; x0 = i - (mx - LEFT) / scale; draw(); }, {passive: false});
document.getElementById('fit').onclick = fit; document.getElementById('fail').onclick = zoomFail;
window.addEventListener('resize', resize);
resize(); if (N > 200) zoomFail(); else fit();
document.body.dataset.rendered = String(threads.length);
document.body.dataset.intervals = String(D.intervals.length);
"#;

#[cfg(test)]
mod tests {
    use super::*;
    use pulse_protocol::trace::{Event, ThreadInfo};

    fn sample() -> Trace {
        let ev = |thread, kind, object: &str| Event {
            thread,
            kind,
            op: "op".into(),
            object: Some(object.into()),
            location: Some("src/lib.rs:1:1".into()),
            ..Default::default()
        };
        let mut t = Trace {
            version: TRACE_VERSION,
            test: "t".into(),
            outcome: "panic".into(),
            threads: vec![
                ThreadInfo {
                    id: 0,
                    name: "main".into(),
                    ..Default::default()
                },
                ThreadInfo {
                    id: 1,
                    name: "thread-1".into(),
                    spawned_by: Some(0),
                    ..Default::default()
                },
            ],
            events: vec![
                ev(0, EventKind::Spawn, "Thread#1"),
                ev(1, EventKind::Store, "AtomicU32#0"),
                ev(0, EventKind::Store, "AtomicU32#0"),
            ],
            failing_event: Some(2),
            ..Default::default()
        };
        t.link();
        t
    }

    #[test]
    fn a_long_schedule_line_is_its_start_and_end_with_its_size() {
        assert_eq!(shortened("S0--P1-S0"), "S0--P1-S0");
        let long = format!("S0{}P1{}S0-", "-".repeat(500), "-".repeat(300));
        let short = shortened(&long);
        assert!(short.starts_with("S0---") && short.contains("…"), "{short}");
        assert!(short.ends_with("-S0- (804 steps, 3 switches)"), "{short}");
        assert!(short.chars().count() < 400, "{short}");
    }

    #[test]
    fn orderings_and_fences_show_in_the_text_view() {
        let mut t = sample();
        t.events[1].order = Some(pulse_protocol::trace::Order::Release);
        t.events.push(Event {
            thread: 0,
            kind: EventKind::Fence,
            op: "atomic::fence".into(),
            order: Some(pulse_protocol::trace::Order::Acquire),
            ..Default::default()
        });
        let text = text(&t);
        assert!(text.contains("op (Release)"), "{text}");
        assert!(text.contains("atomic::fence (Acquire)"), "{text}");
    }

    #[test]
    fn dot_has_lanes_sync_and_exactly_the_racing_edge() {
        let d = dot(&sample());
        assert!(
            d.contains("subgraph cluster_t0") && d.contains("subgraph cluster_t1"),
            "{d}"
        );
        assert_eq!(d.matches("class=race").count(), 1, "{d}");
        assert!(d.contains("e1 -> e2 [style=dotted"), "{d}");
        assert!(d.contains("e0 -> e1 [color=gray40"), "{d}");
    }

    #[test]
    fn statem_operations_show_as_intervals_in_text_and_html() {
        let mut t = sample();
        let op = |thread, kind, value: Option<&str>| Event {
            thread,
            kind,
            op: "Push(1)".into(),
            object: Some("v2".into()),
            value: value.map(str::to_string),
            ..Default::default()
        };
        t.events.insert(1, op(1, EventKind::Invoke, None));
        t.events
            .insert(3, op(1, EventKind::Response, Some("Ok(())")));
        t.failing_event = Some(4);
        t.link();
        let shown = text(&t);
        assert!(shown.contains("operations (pulse::statem"), "{shown}");
        let row = shown
            .lines()
            .find(|l| l.split_whitespace().take(2).eq(["thread-1", "v2"]))
            .unwrap_or_else(|| panic!("{shown}"));
        assert!(
            row.contains("Push(1)") && row.contains("-> Ok(())") && row.contains("events 1..3"),
            "{row}"
        );
        assert!(row.contains("(1 of its own)"), "{row}");
        assert!(shown.contains("calls Push(1)"), "{shown}");
        assert!(shown.contains("Push(1) returns Ok(())"), "{shown}");
        let h = html(&t);
        assert!(h.contains(r#""intervals":[[1,3]]"#), "{h}");
        assert!(!text(&sample()).contains("operations ("));
    }

    #[test]
    fn html_is_self_contained_and_text_marks_the_failure() {
        let h = html(&sample());
        assert!(
            !h.contains("http://") && !h.contains("https://"),
            "no network"
        );
        assert!(h.contains("<canvas"));
        let t = text(&sample());
        assert!(t.contains("*!     2"), "{t}");
        assert!(t.contains("schedule: S0P1P0"), "{t}");
    }
}
