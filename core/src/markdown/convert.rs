//! html2text 2025.4.15's `HTML2Text` as the reference configures it (`bodywidth=0`, links and
//! images kept, every other option at its default): the handler calls of `tokenizer` in,
//! the text `finish` returns out. Only the state and branches that configuration reaches
//! are here (no Google Docs styles, no reference links, no table padding, no wrapping); each
//! method keeps html2text's name and order of effects, quirks included (counters that go
//! negative, the `[` a heading inside a link takes back, `abbr` text that collects
//! everything `o` is given).

use std::borrow::Cow;

use super::chars::{decode, is_space, lower_equals, push_char, strip};
use super::escape::{collapse_whitespace, escape_md_into, escape_md_section};
use super::spec_error::SpecError;
use super::tokenizer::{Attr, Handler};
use super::unescape::{digits_value, html5, parse_int, INT_MAX_STR_DIGITS};

/// The tag names html2text acts on (html.parser lowers names with `str.lower`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Tag {
    A,
    Abbr,
    B,
    Blockquote,
    Body,
    Br,
    Code,
    Dd,
    Del,
    Div,
    Dl,
    Dt,
    Em,
    Heading(u8),
    Head,
    Hr,
    I,
    Img,
    Kbd,
    Li,
    Ol,
    P,
    Pre,
    Q,
    S,
    Script,
    Strike,
    Strong,
    Style,
    Table,
    Td,
    Th,
    Tr,
    Tt,
    U,
    Ul,
    Other,
}

fn classify(name: &[u8]) -> Tag {
    if name.len() > 10 && !name.iter().any(|&c| c >= 0x80) {
        return Tag::Other;
    }
    let mut lower = [0u8; 10];
    let mut len = 0;
    let mut i = 0;
    while i < name.len() {
        if len == lower.len() {
            return Tag::Other;
        }
        let x = name[i];
        if x < 0x80 {
            lower[len] = x.to_ascii_lowercase();
            i += 1;
        } else {
            let (c, n) = decode(name, i);
            match crate::py_tables::LOWER_TO_ASCII.iter().find(|&&(f, _)| f == c) {
                Some(&(_, l)) => lower[len] = l,
                None => return Tag::Other,
            }
            i += n;
        }
        len += 1;
    }
    match &lower[..len] {
        b"a" => Tag::A,
        b"abbr" => Tag::Abbr,
        b"b" => Tag::B,
        b"blockquote" => Tag::Blockquote,
        b"body" => Tag::Body,
        b"br" => Tag::Br,
        b"code" => Tag::Code,
        b"dd" => Tag::Dd,
        b"del" => Tag::Del,
        b"div" => Tag::Div,
        b"dl" => Tag::Dl,
        b"dt" => Tag::Dt,
        b"em" => Tag::Em,
        [b'h', d @ b'1'..=b'9'] => Tag::Heading(d - b'0'),
        b"head" => Tag::Head,
        b"hr" => Tag::Hr,
        b"i" => Tag::I,
        b"img" => Tag::Img,
        b"kbd" => Tag::Kbd,
        b"li" => Tag::Li,
        b"ol" => Tag::Ol,
        b"p" => Tag::P,
        b"pre" => Tag::Pre,
        b"q" => Tag::Q,
        b"s" => Tag::S,
        b"script" => Tag::Script,
        b"strike" => Tag::Strike,
        b"strong" => Tag::Strong,
        b"style" => Tag::Style,
        b"table" => Tag::Table,
        b"td" => Tag::Td,
        b"th" => Tag::Th,
        b"tr" => Tag::Tr,
        b"tt" => Tag::Tt,
        b"u" => Tag::U,
        b"ul" => Tag::Ul,
        _ => Tag::Other,
    }
}

/// The attributes html2text reads, as `dict(attrs)` holds them: absent, present without a
/// value (`None`), or a value; a repeated name keeps its last value.
#[derive(Default)]
struct Attrs {
    href: Option<Option<Vec<u8>>>,
    title: Option<Option<Vec<u8>>>,
    src: Option<Option<Vec<u8>>>,
    alt: Option<Option<Vec<u8>>>,
    start: Option<Option<Vec<u8>>>,
}

impl Attrs {
    fn from(list: Vec<Attr>) -> Attrs {
        let mut attrs = Attrs::default();
        for Attr { name, value } in list {
            let slot = match name.len() {
                3 if lower_equals(name, "alt") => &mut attrs.alt,
                3 if lower_equals(name, "src") => &mut attrs.src,
                4 if lower_equals(name, "href") => &mut attrs.href,
                5 if lower_equals(name, "title") => &mut attrs.title,
                5 if lower_equals(name, "start") => &mut attrs.start,
                _ => continue,
            };
            *slot = Some(value);
        }
        attrs
    }
}

/// `attrs.get(name) or ""`.
fn or_empty(value: &Option<Option<Vec<u8>>>) -> &[u8] {
    match value {
        Some(Some(v)) => v,
        _ => b"",
    }
}

/// A Python int that `<ol start>` may make as large as it likes: sign and decimal digits.
#[derive(Clone)]
struct ListNumber {
    negative: bool,
    digits: Vec<u8>,
}

impl ListNumber {
    /// `list_numbering_start(attrs)`: `int(start) - 1`, 0 when `int` refuses.
    fn start(attrs: &Attrs) -> Result<ListNumber, SpecError> {
        let mut number = ListNumber { negative: false, digits: vec![0] };
        match &attrs.start {
            None => {}
            Some(None) => return Err(SpecError::assertion(String::new())),
            Some(Some(text)) => {
                if let Some((negative, digits)) = parse_int(text) {
                    number = ListNumber { negative, digits };
                    number.sub_one();
                }
            }
        }
        Ok(number)
    }

    fn magnitude_add_one(&mut self) {
        for d in self.digits.iter_mut().rev() {
            if *d == 9 {
                *d = 0;
            } else {
                *d += 1;
                return;
            }
        }
        self.digits.insert(0, 1);
    }

    /// Magnitude minus one (the magnitude is at least one).
    fn magnitude_sub_one(&mut self) {
        for d in self.digits.iter_mut().rev() {
            if *d == 0 {
                *d = 9;
            } else {
                *d -= 1;
                break;
            }
        }
        if self.digits.len() > 1 && self.digits[0] == 0 {
            self.digits.remove(0);
        }
    }

    fn is_zero(&self) -> bool {
        self.digits == [0]
    }

    fn add_one(&mut self) {
        if self.negative {
            self.magnitude_sub_one();
            if self.is_zero() {
                self.negative = false;
            }
        } else {
            self.magnitude_add_one();
        }
    }

    fn sub_one(&mut self) {
        if self.negative {
            self.magnitude_add_one();
        } else if self.is_zero() {
            self.negative = true;
            self.digits = vec![1];
        } else {
            self.magnitude_sub_one();
        }
    }

    /// `str(number)`, which refuses more digits than `int()` reads.
    fn write(&self, out: &mut Vec<u8>) -> Result<(), SpecError> {
        if self.digits.len() > INT_MAX_STR_DIGITS {
            return Err(SpecError::value(format!(
                "Exceeds the limit ({INT_MAX_STR_DIGITS} digits) for integer string conversion; \
                 use sys.set_int_max_str_digits() to increase the limit"
            )));
        }
        if self.negative {
            out.push(b'-');
        }
        out.extend(self.digits.iter().map(|d| b'0' + d));
        Ok(())
    }
}

struct ListElement {
    ordered: bool,
    num: ListNumber,
}

/// An open `<a>` with an `href` (the `attrs` html2text keeps on `astack`).
struct Anchor {
    href: Vec<u8>,
    title: Vec<u8>,
}

#[derive(Clone, Copy, PartialEq)]
enum Force {
    No,
    Yes,
    End,
}

const NBSP_PLACEHOLDER: &[u8] = b"&nbsp_place_holder;";

/// `HTML2Text`'s state (the fields the reference's configuration uses).
pub struct Converter {
    out: Vec<u8>,
    /// where each string given to `outtextf` starts in `out` (`outtextlist`'s items)
    pieces: Vec<usize>,
    quiet: i64,
    p_p: u8,
    start: bool,
    space: bool,
    maybe_automatic_link: Option<Vec<u8>>,
    empty_link: bool,
    astack: Vec<Option<Anchor>>,
    list: Vec<ListElement>,
    blockquote: i64,
    pre: bool,
    startpre: bool,
    pre_indent: Vec<u8>,
    list_code_indent: Vec<u8>,
    code: bool,
    quote: bool,
    br_toggle: bool,
    last_was_nl: bool,
    last_was_list: bool,
    abbr_title: Option<Vec<u8>>,
    abbr_data: Option<Vec<u8>>,
    abbr_list: Vec<(Vec<u8>, Vec<u8>)>,
    stressed: bool,
    preceding_stressed: bool,
    /// the last character of `preceding_data` (all html2text reads of it), None when empty
    preceding_last: Option<u32>,
    current_tag: Tag,
    split_next_td: bool,
    td_count: usize,
    table_start: bool,
}

impl Converter {
    pub fn new(capacity: usize) -> Converter {
        Converter {
            out: Vec::with_capacity(capacity),
            pieces: Vec::new(),
            quiet: 0,
            p_p: 0,
            start: true,
            space: false,
            maybe_automatic_link: None,
            empty_link: false,
            astack: Vec::new(),
            list: Vec::new(),
            blockquote: 0,
            pre: false,
            startpre: false,
            pre_indent: Vec::new(),
            list_code_indent: Vec::new(),
            code: false,
            quote: false,
            br_toggle: false,
            last_was_nl: false,
            last_was_list: false,
            abbr_title: None,
            abbr_data: None,
            abbr_list: Vec::new(),
            stressed: false,
            preceding_stressed: false,
            preceding_last: None,
            current_tag: Tag::Other,
            split_next_td: false,
            td_count: 0,
            table_start: false,
        }
    }

    /// `finish` after `close`: the last line break and the end-of-document `o`, the pieces
    /// joined and the `&nbsp;` placeholder replaced (`optwrap` does nothing at width 0).
    pub fn finish(mut self) -> Vec<u8> {
        self.pbr();
        self.o(b"", false, Force::End);
        let text = self.out;
        if !contains(&text, NBSP_PLACEHOLDER) {
            return text;
        }
        let mut out = Vec::with_capacity(text.len());
        let mut i = 0;
        while let Some(k) = find(&text[i..], NBSP_PLACEHOLDER) {
            out.extend_from_slice(&text[i..i + k]);
            out.push(b' ');
            i += k + NBSP_PLACEHOLDER.len();
        }
        out.extend_from_slice(&text[i..]);
        out
    }

    fn outtextf(&mut self, s: &[u8]) {
        self.pieces.push(self.out.len());
        self.out.extend_from_slice(s);
        if let Some(&last) = s.last() {
            self.last_was_nl = last == b'\n';
        }
    }

    fn pbr(&mut self) {
        if self.p_p == 0 {
            self.p_p = 1;
        }
    }

    fn p(&mut self) {
        self.p_p = 2;
    }

    fn soft_br(&mut self) {
        self.pbr();
        self.br_toggle = true;
    }

    /// `o(data, puredata, force)`.
    fn o(&mut self, data: &[u8], puredata: bool, force: Force) {
        if let Some(abbr) = self.abbr_data.as_mut() {
            abbr.extend_from_slice(data);
        }
        if self.quiet != 0 {
            return;
        }
        let mut data: Cow<[u8]> = Cow::Borrowed(data);
        if puredata && !self.pre {
            if let Cow::Owned(collapsed) = collapse_whitespace(&data) {
                data = Cow::Owned(collapsed);
            }
            if data.first() == Some(&b' ') {
                self.space = true;
                data = match data {
                    Cow::Borrowed(d) => Cow::Borrowed(&d[1..]),
                    Cow::Owned(mut d) => {
                        d.remove(0);
                        Cow::Owned(d)
                    }
                };
            }
        }
        if data.is_empty() && force == Force::No {
            return;
        }
        if self.startpre && !data.starts_with(b"\n") && !data.starts_with(b"\r\n") {
            let mut with_break = Vec::with_capacity(data.len() + 1);
            with_break.push(b'\n');
            with_break.extend_from_slice(&data);
            data = Cow::Owned(with_break);
        }
        // built only inside a blockquote: `vec![b'>'; 0]` still calls memset, on an empty
        // Vec's dangling address, where glibc's AVX-512 memset stores under an all-zero mask
        // and the CPU suppresses the fault in microcode (~90 ns a call: 7% of this stage)
        let mut bq = Vec::new();
        if self.blockquote > 0 {
            bq.resize(self.blockquote as usize, b'>');
        }
        if !(force != Force::No && data.first() == Some(&b'>')) && self.blockquote != 0 {
            bq.push(b' ');
        }
        if self.pre {
            if !self.list.is_empty() {
                bq.extend_from_slice(&self.list_code_indent);
            }
            bq.extend_from_slice(b"    ");
            if data.contains(&b'\n') {
                let mut indented = Vec::with_capacity(data.len() + 16);
                for &c in data.iter() {
                    indented.push(c);
                    if c == b'\n' {
                        indented.extend_from_slice(&bq);
                    }
                }
                data = Cow::Owned(indented);
            }
            self.pre_indent.clone_from(&bq);
        }
        if self.startpre {
            self.startpre = false;
            if !self.list.is_empty() {
                // str.lstrip with the characters of "\n" + pre_indent
                let indent = &self.pre_indent;
                let skip = data.iter().take_while(|&&c| c == b'\n' || indent.contains(&c)).count();
                data = Cow::Owned(data[skip..].to_vec());
            }
        }
        if self.start {
            self.space = false;
            self.p_p = 0;
            self.start = false;
        }
        if force == Force::End {
            self.p_p = 0;
            self.outtextf(b"\n");
            self.space = false;
        }
        if self.p_p != 0 {
            let mut breaks = Vec::new();
            for _ in 0..self.p_p {
                if self.br_toggle {
                    breaks.extend_from_slice(b"  ");
                }
                breaks.push(b'\n');
                breaks.extend_from_slice(&bq);
            }
            self.outtextf(&breaks);
            self.space = false;
            self.br_toggle = false;
        }
        if self.space {
            if !self.last_was_nl {
                self.outtextf(b" ");
            }
            self.space = false;
        }
        if force == Force::End && !self.abbr_list.is_empty() {
            for (abbr, definition) in std::mem::take(&mut self.abbr_list) {
                let mut line = b"  *[".to_vec();
                line.extend_from_slice(&abbr);
                line.extend_from_slice(b"]: ");
                line.extend_from_slice(&definition);
                line.push(b'\n');
                self.outtextf(&line);
            }
        }
        self.p_p = 0;
        self.outtextf(&data);
    }

    fn o_str(&mut self, data: &[u8]) {
        self.o(data, false, Force::No);
    }

    /// `handle_data(data, entity_char)`.
    fn handle_data(&mut self, data: &[u8], entity_char: bool) {
        if data.is_empty() {
            return;
        }
        let mut data: Cow<[u8]> = Cow::Borrowed(data);
        if self.stressed {
            data = match data {
                Cow::Borrowed(d) => Cow::Borrowed(strip(d)),
                Cow::Owned(d) => Cow::Owned(strip(&d).to_vec()),
            };
            self.stressed = false;
            self.preceding_stressed = true;
        } else if self.preceding_stressed {
            let (first, _) = decode(&data, 0);
            let opens = !(is_space(first) || (first < 0x80 && b"][(){}.!?".contains(&(first as u8))));
            if opens && !matches!(self.current_tag, Tag::Heading(_) | Tag::A | Tag::Code | Tag::Pre) {
                let mut spaced = Vec::with_capacity(data.len() + 1);
                spaced.push(b' ');
                spaced.extend_from_slice(&data);
                data = Cow::Owned(spaced);
            }
            self.preceding_stressed = false;
        }
        if let Some(href) = self.maybe_automatic_link.take() {
            if *href == *data && is_absolute_url(&href) {
                let mut link = Vec::with_capacity(data.len() + 2);
                link.push(b'<');
                link.extend_from_slice(&data);
                link.push(b'>');
                self.o_str(&link);
                self.empty_link = false;
                self.maybe_automatic_link = Some(href);
                return;
            }
            self.o_str(b"[");
            self.empty_link = false;
        }
        if !self.code && !self.pre && !entity_char {
            if let Cow::Owned(escaped) = escape_md_section(&data) {
                data = Cow::Owned(escaped);
            }
        }
        self.preceding_last = if data.is_empty() { None } else { Some(last_char(&data)) };
        self.o(&data, true, Force::No);
    }

    fn set_preceding_space(&mut self) {
        self.preceding_last = Some(b' ' as u32);
    }

    /// `handle_tag(tag, attrs, start)`.
    fn handle_tag(&mut self, tag: Tag, mut attrs: Attrs, start: bool) -> Result<(), SpecError> {
        self.current_tag = tag;
        if start
            && self.maybe_automatic_link.is_some()
            && !matches!(tag, Tag::P | Tag::Div | Tag::Style | Tag::Dl | Tag::Dt | Tag::Img)
        {
            self.o_str(b"[");
            self.maybe_automatic_link = None;
            self.empty_link = false;
        }
        if let Tag::Heading(level) = tag {
            let marks = {
                let mut m = vec![b'#'; level as usize];
                m.push(b' ');
                m
            };
            if !self.astack.is_empty() {
                if start {
                    // inside a link's text: the "#"s go before its "["
                    if self.pieces.last().is_some_and(|&k| &self.out[k..] == b"[") {
                        let k = self.pieces.pop().unwrap_or(0);
                        self.out.truncate(k);
                        self.space = false;
                        self.o_str(&marks);
                        self.o_str(b"[");
                    }
                } else {
                    self.p_p = 0;
                    return Ok(());
                }
            } else {
                self.p();
                if start {
                    self.o_str(&marks);
                } else {
                    return Ok(());
                }
            }
        }
        if matches!(tag, Tag::P | Tag::Div) && self.astack.is_empty() && !self.split_next_td {
            self.p();
        }
        if tag == Tag::Br && start {
            self.o_str(if self.blockquote > 0 { b"  \n> " } else { b"  \n" });
        }
        if tag == Tag::Hr && start {
            self.p();
            self.o_str(b"* * *");
            self.p();
        }
        if matches!(tag, Tag::Head | Tag::Style | Tag::Script) {
            self.quiet += if start { 1 } else { -1 };
        }
        if tag == Tag::Body {
            self.quiet = 0;
        }
        if tag == Tag::Blockquote {
            if start {
                self.p();
                self.o(b"> ", false, Force::Yes);
                self.start = true;
                self.blockquote += 1;
            } else {
                self.blockquote -= 1;
                self.p();
            }
        }
        if matches!(tag, Tag::Em | Tag::I | Tag::U) {
            // a space first after a letter or digit, or the marks would not render
            if start
                && self.preceding_last.is_some_and(|c| {
                    !(c < 0x80
                        && (b" \t\n\r\x0b\x0c".contains(&(c as u8)) || (c as u8).is_ascii_punctuation()))
                })
            {
                self.o_str(b" _");
                self.set_preceding_space();
            } else {
                self.o_str(b"_");
            }
            if start {
                self.stressed = true;
            }
        }
        if matches!(tag, Tag::Strong | Tag::B) {
            if start && self.preceding_last == Some(b'*' as u32) {
                self.o_str(b" **");
                self.set_preceding_space();
            } else {
                self.o_str(b"**");
            }
            if start {
                self.stressed = true;
            }
        }
        if matches!(tag, Tag::Del | Tag::Strike | Tag::S) {
            if start && self.preceding_last == Some(b'~' as u32) {
                self.o_str(b" ~~");
                self.set_preceding_space();
            } else {
                self.o_str(b"~~");
            }
            if start {
                self.stressed = true;
            }
        }
        if matches!(tag, Tag::Kbd | Tag::Code | Tag::Tt) && !self.pre {
            self.o_str(b"`");
            self.code = !self.code;
        }
        if tag == Tag::Abbr {
            if start {
                self.abbr_title = None;
                self.abbr_data = Some(Vec::new());
                if let Some(title) = &attrs.title {
                    self.abbr_title = title.clone();
                }
            } else {
                if let Some(title) = self.abbr_title.take() {
                    let data = self.abbr_data.clone().unwrap_or_default();
                    match self.abbr_list.iter_mut().find(|(k, _)| *k == data) {
                        Some(entry) => entry.1 = title,
                        None => self.abbr_list.push((data, title)),
                    }
                }
                self.abbr_data = None;
            }
        }
        if tag == Tag::Q {
            self.o_str(b"\"");
            self.quote = !self.quote;
        }
        if tag == Tag::A {
            if start {
                match &attrs.href {
                    Some(Some(href)) if !href.starts_with(b"#") => {
                        self.maybe_automatic_link = Some(href.clone());
                        self.empty_link = true;
                        self.astack.push(Some(Anchor {
                            href: href.clone(),
                            title: or_empty(&attrs.title).to_vec(),
                        }));
                    }
                    _ => self.astack.push(None),
                }
            } else if let Some(anchor) = self.astack.pop() {
                if self.maybe_automatic_link.as_ref().is_some_and(|l| !l.is_empty()) && !self.empty_link {
                    self.maybe_automatic_link = None;
                } else if let Some(anchor) = anchor {
                    if self.empty_link {
                        self.o_str(b"[");
                        self.empty_link = false;
                        self.maybe_automatic_link = None;
                    }
                    self.p_p = 0;
                    // link_url: "](url "title")", the title only when it is not blank
                    let mut link = b"](".to_vec();
                    escape_md_into(&mut link, &anchor.href);
                    let mut title = Vec::new();
                    escape_md_into(&mut title, &anchor.title);
                    if !strip(&title).is_empty() {
                        link.extend_from_slice(b" \"");
                        link.extend_from_slice(&title);
                        link.push(b'"');
                    }
                    link.push(b')');
                    self.o_str(&link);
                }
            }
        }
        if tag == Tag::Img && start {
            if let Some(Some(src)) = attrs.src.take() {
                if self.maybe_automatic_link.is_some() {
                    self.o_str(b"[");
                    self.maybe_automatic_link = None;
                    self.empty_link = false;
                }
                let mut image = b"![".to_vec();
                escape_md_into(&mut image, or_empty(&attrs.alt));
                image.push(b']');
                self.o_str(&image);
                let mut target = b"(".to_vec();
                escape_md_into(&mut target, &src);
                target.push(b')');
                self.o_str(&target);
            }
        }
        if tag == Tag::Dl && start {
            self.p();
        }
        if tag == Tag::Dt && !start {
            self.pbr();
        }
        if tag == Tag::Dd {
            if start {
                self.o_str(b"    ");
            } else {
                self.pbr();
            }
        }
        if matches!(tag, Tag::Ol | Tag::Ul) {
            if self.list.is_empty() && !self.last_was_list {
                self.p();
            }
            if start {
                let num = ListNumber::start(&attrs)?;
                self.list.push(ListElement { ordered: tag == Tag::Ol, num });
            } else if self.list.pop().is_some() && self.list.is_empty() {
                self.o_str(b"\n");
            }
            self.last_was_list = true;
        } else {
            self.last_was_list = false;
        }
        if tag == Tag::Li {
            self.list_code_indent.clear();
            self.pbr();
            if start {
                // two spaces per enclosing list, three inside an ordered one
                let mut parent_ordered = false;
                for (k, list) in self.list.iter().enumerate() {
                    let step: &[u8] = if k > 0 && parent_ordered { b"   " } else { b"  " };
                    self.list_code_indent.extend_from_slice(step);
                    parent_ordered = list.ordered;
                }
                let indent = self.list_code_indent.clone();
                self.o_str(&indent);
                match self.list.last_mut() {
                    Some(li) if li.ordered => {
                        li.num.add_one();
                        let mut mark = Vec::new();
                        li.num.write(&mut mark)?;
                        mark.extend_from_slice(b". ");
                        self.list_code_indent.extend_from_slice(b"   ");
                        self.o_str(&mark);
                    }
                    _ => {
                        self.list_code_indent.extend_from_slice(b"  ");
                        self.o_str(b"* ");
                    }
                }
                self.start = true;
            }
        }
        match tag {
            Tag::Table if start => self.table_start = true,
            Tag::Td | Tag::Th if start => {
                if self.split_next_td {
                    self.o_str(b"| ");
                }
                self.split_next_td = true;
                self.td_count += 1;
            }
            Tag::Tr if start => self.td_count = 0,
            Tag::Tr => {
                self.split_next_td = false;
                self.soft_br();
                if self.table_start {
                    let mut rule = Vec::new();
                    for k in 0..self.td_count {
                        if k > 0 {
                            rule.push(b'|');
                        }
                        rule.extend_from_slice(b"---");
                    }
                    self.o_str(&rule);
                    self.soft_br();
                    self.table_start = false;
                }
            }
            _ => {}
        }
        if tag == Tag::Pre {
            if start {
                self.startpre = true;
                self.pre = true;
                self.pre_indent.clear();
            } else {
                self.pre = false;
            }
            self.p();
        }
        Ok(())
    }

    /// `charref(name)`: the text of a numeric character reference.
    fn charref(name: &[u8], out: &mut Vec<u8>) -> Result<(), SpecError> {
        let mut c = if name[0] == b'x' || name[0] == b'X' {
            digits_value(&name[1..], 16)
        } else {
            if name.len() > INT_MAX_STR_DIGITS {
                return Err(super::unescape::int_too_long(name.len()));
            }
            digits_value(name, 10)
        };
        if !(0 < c && c < 0x110000) || (0xd800..0xe000).contains(&c) {
            c = 0xfffd;
        }
        let mut c = c as u32;
        if let Ok(k) = crate::py_tables::CONTROL_CHARACTER_REPLACEMENTS.binary_search_by(|&(f, _)| f.cmp(&c))
        {
            c = crate::py_tables::CONTROL_CHARACTER_REPLACEMENTS[k].1;
        }
        match crate::py_tables::UNIFIABLE_N.binary_search_by(|&(f, _)| f.cmp(&c)) {
            Ok(k) => out.extend_from_slice(crate::py_tables::UNIFIABLE_N[k].1.as_bytes()),
            Err(_) => push_char(out, c),
        }
        Ok(())
    }
}

impl Handler for Converter {
    fn start_tag(&mut self, name: &[u8], attrs: Vec<Attr>) -> Result<(), SpecError> {
        self.handle_tag(classify(name), Attrs::from(attrs), true)
    }

    fn end_tag(&mut self, name: &[u8]) -> Result<(), SpecError> {
        self.handle_tag(classify(name), Attrs::default(), false)
    }

    fn data(&mut self, data: &[u8]) -> Result<(), SpecError> {
        self.handle_data(data, false);
        Ok(())
    }

    fn charref(&mut self, name: &[u8]) -> Result<(), SpecError> {
        let mut text = Vec::new();
        Converter::charref(name, &mut text)?;
        self.handle_data(&text, true);
        Ok(())
    }

    fn entityref(&mut self, name: &[u8]) -> Result<(), SpecError> {
        // `entityref(c)`: UNIFIABLE first (the converter's, with the nbsp placeholder), then
        // html5 (with ";"), else the reference as written
        let text: Cow<[u8]> =
            match crate::py_tables::UNIFIABLE.binary_search_by(|(k, _)| k.as_bytes().cmp(name)) {
                Ok(k) => Cow::Borrowed(crate::py_tables::UNIFIABLE[k].1.as_bytes()),
                Err(_) => {
                    let mut key = name.to_vec();
                    key.push(b';');
                    match html5(&key) {
                        Some(text) => Cow::Borrowed(text.as_bytes()),
                        None => {
                            let mut text = b"&".to_vec();
                            text.extend_from_slice(&key);
                            Cow::Owned(text)
                        }
                    }
                }
            };
        if !text.is_empty() {
            self.handle_data(&text, true);
        }
        Ok(())
    }
}

/// `^[a-zA-Z+]+://`
fn is_absolute_url(href: &[u8]) -> bool {
    let k = href.iter().take_while(|c| c.is_ascii_alphabetic() || **c == b'+').count();
    k > 0 && href[k..].starts_with(b"://")
}

fn last_char(s: &[u8]) -> u32 {
    super::chars::decode_before(s, s.len())
}

use super::chars::{contains, find_bytes as find};
