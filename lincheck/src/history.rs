//! Reading recorded histories: Jepsen's etcd register logs and the EDN-like key-value format.
//! Each event line is an invocation or a completion (`ok`: it happened with this result,
//! `fail`: it did not happen, `info`: unknown) of the same process's pending operation. The
//! time of an event is its line number. An invocation never completed is unknown.
//! A line that cannot be read is an error naming its line number.

use std::fmt;

use crate::models::{KvInput, KvOutput, RegisterInput, RegisterOutput};
use crate::Operation;

/// A line of a history that could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line number.
    pub line: usize,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for ParseError {}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Invoke,
    Ok,
    Fail,
    Info,
}

fn kind(word: &str) -> Option<Kind> {
    Some(match word {
        ":invoke" => Kind::Invoke,
        ":ok" => Kind::Ok,
        ":fail" => Kind::Fail,
        ":info" => Kind::Info,
        _ => return None,
    })
}

/// Pairs invocations with completions per process.
struct Pairing<I, O> {
    ops: Vec<Operation<I, O>>,
    /// Per process: the index in `ops` of its pending invocation.
    pending: std::collections::HashMap<usize, usize>,
    /// Operations that failed (did not happen), removed at the end.
    failed: Vec<bool>,
}

impl<I, O> Pairing<I, O> {
    fn new() -> Self {
        Pairing {
            ops: Vec::new(),
            pending: Default::default(),
            failed: Vec::new(),
        }
    }

    fn invoke(&mut self, line: usize, process: usize, input: I) -> Result<(), ParseError> {
        if self.pending.contains_key(&process) {
            return Err(ParseError {
                line,
                message: format!(
                    "process {process} invokes while its previous operation is pending"
                ),
            });
        }
        self.pending.insert(process, self.ops.len());
        self.ops.push(Operation {
            client: process,
            input,
            call: line as u64,
            output: None,
            ret: None,
        });
        self.failed.push(false);
        Ok(())
    }

    /// Completes `process`'s pending operation; `check` may inspect the input.
    fn complete(
        &mut self,
        line: usize,
        process: usize,
        kind: Kind,
        output: impl FnOnce(&I) -> Result<O, String>,
    ) -> Result<(), ParseError> {
        let Some(i) = self.pending.remove(&process) else {
            return Err(ParseError {
                line,
                message: format!("process {process} completes an operation it never invoked"),
            });
        };
        match kind {
            Kind::Ok => {
                let out =
                    output(&self.ops[i].input).map_err(|message| ParseError { line, message })?;
                self.ops[i].output = Some(out);
                self.ops[i].ret = Some(line as u64);
            }
            Kind::Fail => self.failed[i] = true,
            Kind::Info | Kind::Invoke => {}
        }
        Ok(())
    }

    fn finish(self) -> Vec<Operation<I, O>> {
        self.ops
            .into_iter()
            .zip(self.failed)
            .filter(|(_, failed)| !failed)
            .map(|(op, _)| op)
            .collect()
    }
}

fn parse_int(s: &str) -> Result<i64, String> {
    s.parse()
        .map_err(|_| format!("expected an integer, found `{s}`"))
}

/// Reads a Jepsen etcd register log (`INFO  jepsen.util - 3 :invoke :write 4`, tab-separated). A failed
/// compare-and-set happened and found another value; a failed read or write did not happen.
pub fn parse_jepsen_register(
    text: &str,
) -> Result<Vec<Operation<RegisterInput, RegisterOutput>>, ParseError> {
    let mut pairing = Pairing::new();
    for (k, raw) in text.lines().enumerate() {
        let line = k + 1;
        let raw = raw.trim();
        if raw.is_empty() {
            continue;
        }
        let err = |message: String| ParseError { line, message };
        let Some((_, rest)) = raw.split_once("jepsen.util - ") else {
            return Err(err(
                "expected `jepsen.util - <process> :<type> :<f> <value>`".into(),
            ));
        };
        let mut words = rest.split_whitespace();
        let process: usize = words
            .next()
            .and_then(|p| p.parse().ok())
            .ok_or_else(|| err("expected a process number".into()))?;
        let kind = words
            .next()
            .and_then(kind)
            .ok_or_else(|| err("expected :invoke, :ok, :fail or :info".into()))?;
        let f = words
            .next()
            .ok_or_else(|| err("expected :read, :write or :cas".into()))?;
        let value: Vec<&str> = words.collect();
        let value = value.join(" ");
        if kind == Kind::Invoke {
            let input = match f {
                ":read" => RegisterInput::Read,
                ":write" => RegisterInput::Write(parse_int(&value).map_err(err)?),
                ":cas" => {
                    let inner = value.trim_start_matches('[').trim_end_matches(']');
                    let mut parts = inner.split_whitespace();
                    match (parts.next(), parts.next(), parts.next()) {
                        (Some(a), Some(b), None) => RegisterInput::Cas(
                            parse_int(a).map_err(err)?,
                            parse_int(b).map_err(err)?,
                        ),
                        _ => return Err(err(format!("expected `[from to]`, found `{value}`"))),
                    }
                }
                other => return Err(err(format!("unknown operation `{other}`"))),
            };
            pairing.invoke(line, process, input)?;
        } else {
            let kind = if kind == Kind::Fail && f == ":cas" {
                Kind::Ok
            } else {
                kind
            };
            let failed_cas = f == ":cas" && raw.contains(":fail");
            pairing.complete(line, process, kind, |input| match input {
                RegisterInput::Read if value == "nil" => Ok(RegisterOutput::Read(None)),
                RegisterInput::Read => parse_int(&value).map(|v| RegisterOutput::Read(Some(v))),
                RegisterInput::Write(_) => Ok(RegisterOutput::Written),
                RegisterInput::Cas(..) => Ok(RegisterOutput::Cas(!failed_cas)),
            })?;
        }
    }
    Ok(pairing.finish())
}

/// The value of `:name` in an EDN-like map line: the text up to the next `, :` or `}`.
fn field<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    let start = line.find(name)? + name.len();
    let rest = line[start..].trim_start();
    if let Some(quoted) = rest.strip_prefix('"') {
        let end = quoted.find('"')?;
        return Some(&rest[..end + 2]);
    }
    let end = rest.find([',', '}']).unwrap_or(rest.len());
    Some(rest[..end].trim())
}

fn unquote(v: &str) -> Option<String> {
    v.strip_prefix('"')?.strip_suffix('"').map(str::to_string)
}

/// Reads a key-value history in the EDN-like format
/// (`{:process 0, :type :invoke, :f :append, :key "0", :value "x 0 0 y"}`).
pub fn parse_kv(text: &str) -> Result<Vec<Operation<KvInput, KvOutput>>, ParseError> {
    let mut pairing = Pairing::new();
    for (k, raw) in text.lines().enumerate() {
        let line = k + 1;
        let raw = raw.trim();
        if raw.is_empty() {
            continue;
        }
        let err = |message: &str| ParseError {
            line,
            message: message.to_string(),
        };
        if !raw.starts_with('{') {
            return Err(err(
                "expected `{:process N, :type :T, :f :F, :key \"K\", :value V}`",
            ));
        }
        let process: usize = field(raw, ":process")
            .and_then(|p| p.parse().ok())
            .ok_or_else(|| err("expected `:process N`"))?;
        let kind = field(raw, ":type")
            .and_then(kind)
            .ok_or_else(|| err("expected `:type` :invoke, :ok, :fail or :info"))?;
        let f = field(raw, ":f").ok_or_else(|| err("expected `:f`"))?;
        let key = field(raw, ":key")
            .and_then(unquote)
            .ok_or_else(|| err("expected `:key \"K\"`"))?;
        let value = field(raw, ":value").ok_or_else(|| err("expected `:value`"))?;
        if kind == Kind::Invoke {
            let input = match f {
                ":get" => KvInput::Get(key),
                ":put" | ":append" => {
                    let v = unquote(value).ok_or_else(|| err("expected a quoted `:value`"))?;
                    if f == ":put" {
                        KvInput::Put(key, v.into())
                    } else {
                        KvInput::Append(key, v.into())
                    }
                }
                _ => return Err(err("expected `:f` :get, :put or :append")),
            };
            pairing.invoke(line, process, input)?;
        } else {
            pairing.complete(line, process, kind, |input| match input {
                KvInput::Get(_) => unquote(value)
                    .map(KvOutput::Value)
                    .ok_or_else(|| "expected a quoted `:value` for a completed get".to_string()),
                _ => Ok(KvOutput::Done),
            })?;
        }
    }
    Ok(pairing.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_register_events_with_tabs_or_spaces() {
        let text = "INFO  jepsen.util - 0\t:invoke\t:read\tnil\n\
                    INFO  jepsen.util - 1   :invoke :cas    [3 0]\n\
                    INFO  jepsen.util - 0\t:ok\t:read\t4\n\
                    INFO  jepsen.util - 1   :fail   :cas    [3 0]\n\
                    INFO  jepsen.util - 2\t:invoke\t:write\t1\n\
                    INFO  jepsen.util - 2\t:info\t:write\t1\n\
                    INFO  jepsen.util - 3\t:invoke\t:read\tnil\n\
                    INFO  jepsen.util - 3\t:fail\t:read\t:timed-out\n";
        let ops = parse_jepsen_register(text).unwrap();
        assert_eq!(ops.len(), 3, "{ops:?}");
        assert_eq!(ops[0].output, Some(RegisterOutput::Read(Some(4))));
        assert_eq!((ops[0].call, ops[0].ret), (1, Some(3)));
        assert_eq!(ops[1].input, RegisterInput::Cas(3, 0));
        assert_eq!(ops[1].output, Some(RegisterOutput::Cas(false)));
        assert_eq!((ops[2].output.clone(), ops[2].ret), (None, None));
    }

    #[test]
    fn names_the_line_it_cannot_read() {
        let text =
            "INFO  jepsen.util - 0\t:invoke\t:read\tnil\nINFO  jepsen.util - 0\t:ok\t:frob\tx\n";
        assert_eq!(parse_jepsen_register(text).unwrap_err().line, 2);
        let text = "{:process 0, :type :invoke, :f :get, :key \"1\", :value nil}\nnot edn\n";
        assert_eq!(parse_kv(text).unwrap_err().line, 2);
    }

    #[test]
    fn reads_kv_events() {
        let text = "{:process 0, :type :invoke, :f :append, :key \"0\", :value \"x 0 0 y\"}\n\
                    {:process 1, :type :invoke, :f :get, :key \"0\", :value nil}\n\
                    {:process 0, :type :ok, :f :append, :key \"0\", :value \"x 0 0 y\"}\n\
                    {:process 1, :type :ok, :f :get, :key \"0\", :value \"\"}\n";
        let ops = parse_kv(text).unwrap();
        assert_eq!(ops[0].input, KvInput::Append("0".into(), "x 0 0 y".into()));
        assert_eq!(ops[1].output, Some(KvOutput::Value(String::new())));
    }
}
