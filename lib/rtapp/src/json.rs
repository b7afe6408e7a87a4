//! A small JSON parser for rt-app workload files.
//!
//! Contract: [`parse`] never panics, whatever the input; recursion is bounded by
//! [`MAX_DEPTH`]; every value and every object member carries the 1-based line it starts on.
//!
//! It accepts JSON (RFC 8259) plus what rt-app's files use in practice:
//! * comments: `/* ... */` and `// ...` to the end of the line (json-c accepts both);
//! * a trailing comma before `}` or `]`;
//! * **duplicate keys**, kept in file order (workgen turns repeated keys into successive
//!   events, so `"run": 10, "sleep": 5, "run": 10` is three events);
//! * a **bare key** as an object member (`"suspend",`), which workgen completes with the
//!   thread's name; it is kept as a member with [`Member::bare`] set and a `null` value.
//!
//! Grammar (informal):
//! ```text
//! value  := object | array | string | number | "true" | "false" | "null"
//! object := "{" [ member ("," member)* [","] ] "}"
//! member := string [ ":" value ]            (no ":" = bare key)
//! array  := "[" [ value ("," value)* [","] ] "]"
//! number := "-"? digits ("." digits)? ([eE] [+-]? digits)?   (integers must fit i64)
//! ```

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

/// Deepest nesting of objects/arrays accepted (keeps the kernel's stack safe).
pub const MAX_DEPTH: usize = 32;

/// A parsed value with the line it starts on.
#[derive(Clone, Debug, PartialEq)]
pub struct Value {
    pub line: u32,
    pub kind: Kind,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Array(Vec<Value>),
    /// Members in file order, duplicates kept.
    Object(Vec<Member>),
}

/// One `"key": value` member of an object.
#[derive(Clone, Debug, PartialEq)]
pub struct Member {
    pub key: String,
    pub line: u32,
    pub value: Value,
    /// Written as a bare key (`"suspend",`): `value` is `null`.
    pub bare: bool,
}

/// A syntax error: where and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntaxError {
    pub line: u32,
    pub msg: String,
}

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.msg)
    }
}

impl Kind {
    /// Name of the JSON type, for error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Kind::Null => "null",
            Kind::Bool(_) => "boolean",
            Kind::Int(_) => "integer",
            Kind::Float(_) => "number",
            Kind::Str(_) => "string",
            Kind::Array(_) => "array",
            Kind::Object(_) => "object",
        }
    }
}

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
    line: u32,
}

type R<T> = Result<T, SyntaxError>;

/// Parses a whole document (one value, then only whitespace/comments).
pub fn parse(input: &[u8]) -> R<Value> {
    if let Err(e) = core::str::from_utf8(input) {
        let upto = &input[..e.valid_up_to()];
        let line = 1 + upto.iter().filter(|&&b| b == b'\n').count() as u32;
        return Err(SyntaxError { line, msg: "file is not valid UTF-8".into() });
    }
    let mut p = Parser { s: input, pos: 0, line: 1 };
    // A UTF-8 byte-order mark is allowed.
    if p.s.starts_with(&[0xEF, 0xBB, 0xBF]) {
        p.pos = 3;
    }
    p.skip_ws()?;
    if p.pos >= p.s.len() {
        return Err(p.err("empty file: expected a JSON object"));
    }
    let v = p.value(0)?;
    p.skip_ws()?;
    if p.pos < p.s.len() {
        return Err(p.err(&format!("unexpected {} after the end of the document", p.describe())));
    }
    Ok(v)
}

impl<'a> Parser<'a> {
    fn err(&self, msg: &str) -> SyntaxError {
        SyntaxError { line: self.line, msg: msg.into() }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    fn describe(&self) -> String {
        match self.peek() {
            None => "end of file".into(),
            Some(c) if c.is_ascii_graphic() => format!("'{}'", c as char),
            Some(c) => format!("byte 0x{:02x}", c),
        }
    }

    fn bump(&mut self) -> Option<u8> {
        let c = self.peek()?;
        self.pos += 1;
        if c == b'\n' {
            self.line += 1;
        }
        Some(c)
    }

    fn skip_ws(&mut self) -> R<()> {
        loop {
            match self.peek() {
                Some(b' ' | b'\t' | b'\n' | b'\r') => {
                    self.bump();
                }
                Some(b'/') => match self.s.get(self.pos + 1) {
                    Some(b'*') => {
                        let start = self.line;
                        self.pos += 2;
                        loop {
                            match self.bump() {
                                None => return Err(SyntaxError { line: start, msg: "unterminated /* comment".into() }),
                                Some(b'*') if self.peek() == Some(b'/') => {
                                    self.pos += 1;
                                    break;
                                }
                                Some(_) => {}
                            }
                        }
                    }
                    Some(b'/') => {
                        while let Some(c) = self.peek() {
                            if c == b'\n' {
                                break;
                            }
                            self.pos += 1;
                        }
                    }
                    _ => return Err(self.err("unexpected '/' (comments are /* */ or //)")),
                },
                _ => return Ok(()),
            }
        }
    }

    fn value(&mut self, depth: usize) -> R<Value> {
        let line = self.line;
        let kind = match self.peek() {
            Some(b'{') => self.object(depth)?,
            Some(b'[') => self.array(depth)?,
            Some(b'"') => Kind::Str(self.string()?),
            Some(b'-' | b'0'..=b'9') => self.number()?,
            Some(b't') => self.word("true", Kind::Bool(true))?,
            Some(b'f') => self.word("false", Kind::Bool(false))?,
            Some(b'n') => self.word("null", Kind::Null)?,
            _ => return Err(self.err(&format!("expected a value, found {}", self.describe()))),
        };
        Ok(Value { line, kind })
    }

    fn word(&mut self, w: &str, k: Kind) -> R<Kind> {
        if self.s[self.pos..].starts_with(w.as_bytes()) {
            let after = self.s.get(self.pos + w.len()).copied();
            if !after.is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_') {
                self.pos += w.len();
                return Ok(k);
            }
        }
        Err(self.err(&format!("expected a value, found {}", self.describe())))
    }

    fn object(&mut self, depth: usize) -> R<Kind> {
        if depth >= MAX_DEPTH {
            return Err(self.err(&format!("nesting deeper than {} levels", MAX_DEPTH)));
        }
        self.bump(); // '{'
        let mut members = Vec::new();
        loop {
            self.skip_ws()?;
            match self.peek() {
                Some(b'}') => {
                    self.bump();
                    return Ok(Kind::Object(members));
                }
                Some(b'"') => {}
                _ => return Err(self.err(&format!("expected a \"key\" or '}}', found {}", self.describe()))),
            }
            let line = self.line;
            let key = self.string()?;
            self.skip_ws()?;
            let (value, bare) = if self.peek() == Some(b':') {
                self.bump();
                self.skip_ws()?;
                (self.value(depth + 1)?, false)
            } else if matches!(self.peek(), Some(b',' | b'}')) {
                (Value { line, kind: Kind::Null }, true)
            } else {
                return Err(self.err(&format!("expected ':' after \"{}\", found {}", key, self.describe())));
            };
            members.push(Member { key, line, value, bare });
            self.skip_ws()?;
            match self.peek() {
                Some(b',') => {
                    self.bump();
                }
                Some(b'}') => {}
                _ => return Err(self.err(&format!("expected ',' or '}}' after a member, found {}", self.describe()))),
            }
        }
    }

    fn array(&mut self, depth: usize) -> R<Kind> {
        if depth >= MAX_DEPTH {
            return Err(self.err(&format!("nesting deeper than {} levels", MAX_DEPTH)));
        }
        self.bump(); // '['
        let mut items = Vec::new();
        loop {
            self.skip_ws()?;
            if self.peek() == Some(b']') {
                self.bump();
                return Ok(Kind::Array(items));
            }
            items.push(self.value(depth + 1)?);
            self.skip_ws()?;
            match self.peek() {
                Some(b',') => {
                    self.bump();
                }
                Some(b']') => {}
                _ => return Err(self.err(&format!("expected ',' or ']' in an array, found {}", self.describe()))),
            }
        }
    }

    fn hex4(&mut self) -> R<u32> {
        let mut v = 0u32;
        for _ in 0..4 {
            let c = self.peek().ok_or_else(|| self.err("unterminated \\u escape"))?;
            let d = (c as char).to_digit(16).ok_or_else(|| self.err("bad hex digit in \\u escape"))?;
            self.pos += 1;
            v = v * 16 + d;
        }
        Ok(v)
    }

    fn string(&mut self) -> R<String> {
        let start_line = self.line;
        self.bump(); // '"'
        let mut out: Vec<u8> = Vec::new();
        loop {
            let Some(c) = self.peek() else {
                return Err(SyntaxError { line: start_line, msg: "unterminated string".into() });
            };
            match c {
                b'"' => {
                    self.pos += 1;
                    break;
                }
                b'\n' => return Err(SyntaxError { line: start_line, msg: "unterminated string (newline inside)".into() }),
                b'\\' => {
                    self.pos += 1;
                    let e = self.peek().ok_or_else(|| self.err("unterminated escape"))?;
                    self.pos += 1;
                    let ch = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let hi = self.hex4()?;
                            let cp = if (0xD800..0xDC00).contains(&hi) {
                                if self.s.get(self.pos..self.pos + 2) != Some(b"\\u") {
                                    return Err(self.err("unpaired surrogate in \\u escape"));
                                }
                                self.pos += 2;
                                let lo = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&lo) {
                                    return Err(self.err("unpaired surrogate in \\u escape"));
                                }
                                0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                            } else {
                                hi
                            };
                            char::from_u32(cp).ok_or_else(|| self.err("invalid \\u escape"))?
                        }
                        _ => return Err(self.err(&format!("unknown escape '\\{}'", e as char))),
                    };
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                }
                c if c < 0x20 => return Err(self.err("control character inside a string")),
                _ => {
                    out.push(c);
                    self.pos += 1;
                }
            }
        }
        // The input was checked to be UTF-8 and escapes produce UTF-8.
        String::from_utf8(out).map_err(|_| SyntaxError { line: start_line, msg: "string is not valid UTF-8".into() })
    }

    fn number(&mut self) -> R<Kind> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        let digits = |p: &mut Self| {
            let s = p.pos;
            while p.peek().is_some_and(|c| c.is_ascii_digit()) {
                p.pos += 1;
            }
            p.pos - s
        };
        if digits(self) == 0 {
            return Err(self.err("'-' must be followed by digits"));
        }
        let mut float = false;
        if self.peek() == Some(b'.') {
            self.pos += 1;
            float = true;
            if digits(self) == 0 {
                return Err(self.err("digits expected after '.'"));
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.pos += 1;
            float = true;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if digits(self) == 0 {
                return Err(self.err("digits expected in exponent"));
            }
        }
        if self.peek().is_some_and(|c| c.is_ascii_alphabetic() || c == b'_') {
            return Err(self.err(&format!("unexpected {} after a number", self.describe())));
        }
        // Only ASCII digits, signs, '.', 'e' were consumed.
        let text = core::str::from_utf8(&self.s[start..self.pos]).map_err(|_| self.err("bad number"))?;
        if float {
            text.parse::<f64>().map(Kind::Float).map_err(|_| self.err(&format!("bad number {}", text)))
        } else {
            text.parse::<i64>().map(Kind::Int).map_err(|_| self.err(&format!("integer {} out of range", text)))
        }
    }
}

/// Writes `v` as strict JSON (no comments; bare members written as `"key": null`; duplicate
/// keys written as they are — see `crate::peer` for the rt-app-ready rewrite).
pub fn write(v: &Value, indent: usize, out: &mut String) {
    match &v.kind {
        Kind::Null => out.push_str("null"),
        Kind::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Kind::Int(i) => out.push_str(&format!("{}", i)),
        Kind::Float(f) => out.push_str(&format!("{:?}", f)),
        Kind::Str(s) => write_str(s, out),
        Kind::Array(items) => {
            out.push('[');
            for (i, it) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write(it, indent + 1, out);
            }
            out.push(']');
        }
        Kind::Object(members) => {
            out.push_str("{\n");
            for (i, m) in members.iter().enumerate() {
                for _ in 0..=indent {
                    out.push('\t');
                }
                write_str(&m.key, out);
                out.push_str(" : ");
                write(&m.value, indent + 1, out);
                if i + 1 < members.len() {
                    out.push(',');
                }
                out.push('\n');
            }
            for _ in 0..indent {
                out.push('\t');
            }
            out.push('}');
        }
    }
}

/// Writes a JSON string literal.
pub fn write_str(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}
