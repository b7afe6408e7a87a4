//! Kernel command-line tokenizer.
//!
//! Grammar: words separated by ASCII whitespace. A word is `key` or `key=value`. Double or
//! single quotes group characters (including spaces and `;`) anywhere in a word and are removed:
//! `run="a; b"` → key `run`, value `a; b`. Inside double quotes a backslash escapes `"` and `\`.
//! An unterminated quote is an error naming its byte offset; an empty key (`=x`) is an error.
//!
//! `#![forbid(unsafe_code)]`, no_std + alloc, host-tested.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

extern crate alloc;

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

/// A subsystem's boot option, declared in a table next to the code it sets (the scheduler's in
/// `sched::autogroup`, `sched::coresched` and `sched::hrtick`); the kernel's `cmdline` module
/// lists the tables. Its setter runs while the line is parsed (before any CPU but the BSP runs
/// and before the scheduler starts): it sets the subsystem's boot default at once.
pub struct BootParam {
    /// `name`, or `name=VALUES` as help shows it; the name is what comes before `=`.
    pub usage: &'static str,
    /// One line for `cmdline -h`.
    pub help: &'static str,
    /// What the option does; `value` is what follows `=` (`None`: none given). An `Err` is
    /// printed as a warning naming the option, and changes nothing.
    pub set: fn(value: Option<&str>) -> Result<(), String>,
}

impl BootParam {
    /// The option's name (its usage up to `=`).
    pub fn name(&self) -> &'static str {
        option_name(self.usage)
    }
}

/// The name in an option's usage text: what comes before `=`.
pub fn option_name(usage: &str) -> &str {
    usage.split('=').next().unwrap_or(usage)
}

/// One `key[=value]` word.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param {
    pub key: String,
    pub value: Option<String>,
}

/// A malformed command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParseError {
    /// A quote opened at this byte offset is never closed.
    UnterminatedQuote { offset: usize },
    /// A word starting at this byte offset has `=` but no key.
    EmptyKey { offset: usize },
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::UnterminatedQuote { offset } => write!(f, "unterminated quote at byte {offset}"),
            ParseError::EmptyKey { offset } => write!(f, "option without a name at byte {offset}"),
        }
    }
}

/// Splits a command line into words, honouring quotes (quotes removed).
pub fn split_words(line: &str) -> Result<Vec<(usize, String)>, ParseError> {
    let mut words = Vec::new();
    let mut chars = line.char_indices().peekable();
    loop {
        while let Some(&(_, c)) = chars.peek() {
            if c.is_ascii_whitespace() {
                chars.next();
            } else {
                break;
            }
        }
        let Some(&(start, _)) = chars.peek() else { break };
        let mut word = String::new();
        while let Some(&(i, c)) = chars.peek() {
            if c.is_ascii_whitespace() {
                break;
            }
            chars.next();
            if c == '"' || c == '\'' {
                let mut closed = false;
                while let Some((_, q)) = chars.next() {
                    if q == c {
                        closed = true;
                        break;
                    }
                    if c == '"' && q == '\\' {
                        match chars.peek() {
                            Some(&(_, n)) if n == '"' || n == '\\' => {
                                word.push(n);
                                chars.next();
                                continue;
                            }
                            _ => {}
                        }
                    }
                    word.push(q);
                }
                if !closed {
                    return Err(ParseError::UnterminatedQuote { offset: i });
                }
            } else {
                word.push(c);
            }
        }
        words.push((start, word));
    }
    Ok(words)
}

/// Parses a command line into `key[=value]` parameters, in order.
pub fn parse(line: &str) -> Result<Vec<Param>, ParseError> {
    split_words(line)?
        .into_iter()
        .map(|(offset, word)| match word.split_once('=') {
            Some(("", _)) => Err(ParseError::EmptyKey { offset }),
            Some((k, v)) => Ok(Param { key: k.into(), value: Some(v.into()) }),
            None => Ok(Param { key: word, value: None }),
        })
        .collect()
}

/// Splits a shell-style command list on `;` outside quotes (for `run="a; b"`). Empty commands
/// are dropped; whitespace around each is trimmed.
pub fn split_commands(list: &str) -> Vec<String> {
    split_command_list(list, false).into_iter().map(|(c, _)| c).collect()
}

/// Splits a command list into `(command, background)` pairs on `;` outside quotes and, when
/// `background` is set, also on `&` (which marks the command before it as a background job,
/// as in a shell). Empty commands are dropped; whitespace around each is trimmed.
pub fn split_command_list(list: &str, background: bool) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut push = |cur: &mut String, bg: bool| {
        let t = cur.trim();
        if !t.is_empty() {
            out.push((String::from(t), bg));
        }
        cur.clear();
    };
    for c in list.chars() {
        match (quote, c) {
            (None, ';') => push(&mut cur, false),
            (None, '&') if background => push(&mut cur, true),
            (None, '"' | '\'') => {
                quote = Some(c);
                cur.push(c);
            }
            (Some(q), _) if q == c => {
                quote = None;
                cur.push(c);
            }
            _ => cur.push(c),
        }
    }
    push(&mut cur, false);
    out
}

/// Parses one `sleep` operand as coreutils does: a non-negative decimal number (`2`, `0.5`,
/// `.25`) with an optional unit suffix, `s` (the default), `m` minutes, `h` hours, `d` days,
/// and Cadence's additions `ms` and `us`. Returns nanoseconds, rounded down (fraction digits
/// past the 18th are ignored); `None` for anything else (an empty number, a sign, an unknown
/// suffix) or a value beyond `u64` nanoseconds.
pub fn parse_duration_ns(word: &str) -> Option<u64> {
    // Two-letter suffixes first: "ms" also ends in 's'.
    const UNITS: [(&str, u128); 6] = [
        ("ms", 1_000_000),
        ("us", 1_000),
        ("s", 1_000_000_000),
        ("m", 60_000_000_000),
        ("h", 3_600_000_000_000),
        ("d", 86_400_000_000_000),
    ];
    let (number, unit_ns) =
        UNITS.iter().find_map(|&(suffix, ns)| word.strip_suffix(suffix).map(|n| (n, ns))).unwrap_or((word, 1_000_000_000));
    let (int, frac) = match number.split_once('.') {
        Some((i, f)) => (i, f),
        None => (number, ""),
    };
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if (int.is_empty() && frac.is_empty()) || !digits(int) || !digits(frac) {
        return None;
    }
    let whole: u128 = if int.is_empty() { 0 } else { int.parse().ok()? };
    // The fraction as nanoseconds of one unit: at most 18 digits kept (enough for `us`).
    let kept = &frac[..frac.len().min(18)];
    let frac_num: u128 = if kept.is_empty() { 0 } else { kept.parse().ok()? };
    let frac_ns = frac_num * unit_ns / 10u128.pow(kept.len() as u32);
    let ns = whole.checked_mul(unit_ns)?.checked_add(frac_ns)?;
    u64::try_from(ns).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(k: &str, v: Option<&str>) -> Param {
        Param { key: k.into(), value: v.map(Into::into) }
    }

    #[test]
    fn plain_words_and_values() {
        assert_eq!(parse("poweroff hz=1000").unwrap(), vec![p("poweroff", None), p("hz", Some("1000"))]);
        assert_eq!(parse("   ").unwrap(), vec![]);
        assert_eq!(parse("").unwrap(), vec![]);
    }

    #[test]
    fn quoted_values_keep_spaces_semicolons_commas() {
        let got = parse(r#"run="trace start; bench pipe -l 20000, x" poweroff"#).unwrap();
        assert_eq!(got, vec![p("run", Some("trace start; bench pipe -l 20000, x")), p("poweroff", None)]);
        assert_eq!(parse("a='b c'").unwrap(), vec![p("a", Some("b c"))]);
        assert_eq!(parse(r#"a="say \"hi\"""#).unwrap(), vec![p("a", Some(r#"say "hi""#))]);
        assert_eq!(parse(r#"a="x=y""#).unwrap(), vec![p("a", Some("x=y"))]);
        assert_eq!(parse("a=").unwrap(), vec![p("a", Some(""))]);
    }

    #[test]
    fn errors_name_offsets() {
        assert_eq!(parse(r#"ok run="abc"#), Err(ParseError::UnterminatedQuote { offset: 7 }));
        assert_eq!(parse("x =y"), Err(ParseError::EmptyKey { offset: 2 }));
        assert_eq!(ParseError::UnterminatedQuote { offset: 3 }.to_string(), "unterminated quote at byte 3");
    }

    #[test]
    fn command_lists() {
        assert_eq!(split_commands("a; b ;; c"), vec!["a", "b", "c"]);
        assert_eq!(split_commands(r#"echo "x;y"; z"#), vec![r#"echo "x;y""#, "z"]);
        assert!(split_commands(" ; ").is_empty());
        assert_eq!(split_commands("a & b"), vec!["a & b"]);
        assert_eq!(split_command_list("a & b; 'c&d' &", true), vec![("a".into(), true), ("b".into(), false), ("'c&d'".into(), true)]);
    }

    #[test]
    fn never_panics_on_odd_input() {
        for s in ["\"", "'", "\\", "=", "a\"b", "\u{0}\u{7f}é=ü", "a=\"\\", "\"\"=1"] {
            let _ = parse(s);
            let _ = split_commands(s);
        }
    }

    #[test]
    fn durations_parse_like_coreutils_sleep() {
        assert_eq!(parse_duration_ns("2"), Some(2_000_000_000));
        assert_eq!(parse_duration_ns("0.5"), Some(500_000_000));
        assert_eq!(parse_duration_ns(".25s"), Some(250_000_000));
        assert_eq!(parse_duration_ns("3."), Some(3_000_000_000));
        assert_eq!(parse_duration_ns("1m"), Some(60_000_000_000));
        assert_eq!(parse_duration_ns("1.5h"), Some(5_400_000_000_000));
        assert_eq!(parse_duration_ns("1d"), Some(86_400_000_000_000));
        assert_eq!(parse_duration_ns("500ms"), Some(500_000_000));
        assert_eq!(parse_duration_ns("20us"), Some(20_000));
        assert_eq!(parse_duration_ns("0.0000000015"), Some(1));
        assert_eq!(parse_duration_ns("0"), Some(0));
        for bad in ["", ".", "x", "-1", "+1", "1x", "1.2.3", "ms", "1 s", "1e3", "99999999999999999999d"] {
            assert_eq!(parse_duration_ns(bad), None, "{:?}", bad);
        }
    }
}
