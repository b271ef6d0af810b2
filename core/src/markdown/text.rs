//! `to_text`: the runtime's plain text of main-content HTML (the format `runtime/markdown.py`
//! documents: a line per block, ` | ` between table cells, `<pre>` lines kept, invisible
//! elements left out).
//!
//! The Python version walks lexbor's HTML5 tree. This one reads the page once as a stream:
//! an HTML5 tokenizer (character references, raw-text and RCDATA elements, comments) and the
//! parts of HTML5 tree construction that decide what text is visible, inside `<pre>`, or
//! where a line or cell starts: the head (what goes there before `<body>`), end tags matched
//! by HTML5's rules (an end tag with no open element is dropped; `</p>` and `</br>` with none
//! still make their element), table parts outside a table dropped, `<select>`'s own content
//! model, SVG and MathML content and the HTML start tags that leave it. Text comes out in
//! document order; where HTML5 moves text (out of a table, before it) the two differ
//! (`python -m bench.markdown_parity` counts such pages). Line, cell and `<pre>`
//! breaks are the same marker characters as the Python version uses, split the same way.

use super::chars::{push_char, skip_space, strip};
use super::escape::collapse_whitespace;
use super::unescape::html5;

const LINE_BREAK: u8 = 0x02;
const CELL: u8 = 0x01;
const PRE_BREAK: u8 = 0x00;

fn is_block(tag: &[u8]) -> bool {
    matches!(
        tag,
        b"address"
            | b"article"
            | b"aside"
            | b"blockquote"
            | b"body"
            | b"caption"
            | b"center"
            | b"dd"
            | b"details"
            | b"dialog"
            | b"dir"
            | b"div"
            | b"dl"
            | b"dt"
            | b"fieldset"
            | b"figcaption"
            | b"figure"
            | b"footer"
            | b"form"
            | b"h1"
            | b"h2"
            | b"h3"
            | b"h4"
            | b"h5"
            | b"h6"
            | b"header"
            | b"hgroup"
            | b"hr"
            | b"html"
            | b"legend"
            | b"li"
            | b"listing"
            | b"main"
            | b"menu"
            | b"nav"
            | b"ol"
            | b"option"
            | b"p"
            | b"pre"
            | b"section"
            | b"summary"
            | b"table"
            | b"tbody"
            | b"tfoot"
            | b"thead"
            | b"tr"
            | b"ul"
            | b"xmp"
    )
}

/// Elements whose content is not text a reader sees.
fn is_skip(tag: &[u8]) -> bool {
    matches!(
        tag,
        b"head"
            | b"script"
            | b"style"
            | b"template"
            | b"iframe"
            | b"object"
            | b"embed"
            | b"svg"
            | b"math"
            | b"select"
            | b"textarea"
    )
}

fn is_void(tag: &[u8]) -> bool {
    matches!(
        tag,
        b"area"
            | b"base"
            | b"basefont"
            | b"bgsound"
            | b"br"
            | b"col"
            | b"embed"
            | b"frame"
            | b"hr"
            | b"image"
            | b"img"
            | b"input"
            | b"keygen"
            | b"link"
            | b"meta"
            | b"param"
            | b"source"
            | b"track"
            | b"wbr"
    )
}

/// HTML5's "special" elements: an end tag of another name does not close past them.
fn is_special(tag: &[u8]) -> bool {
    is_block(tag)
        || matches!(
            tag,
            b"applet"
                | b"area"
                | b"base"
                | b"basefont"
                | b"bgsound"
                | b"br"
                | b"button"
                | b"col"
                | b"colgroup"
                | b"embed"
                | b"frame"
                | b"frameset"
                | b"head"
                | b"iframe"
                | b"img"
                | b"input"
                | b"keygen"
                | b"link"
                | b"marquee"
                | b"meta"
                | b"noembed"
                | b"noframes"
                | b"noscript"
                | b"object"
                | b"param"
                | b"plaintext"
                | b"script"
                | b"search"
                | b"select"
                | b"source"
                | b"style"
                | b"td"
                | b"template"
                | b"textarea"
                | b"th"
                | b"title"
                | b"track"
                | b"wbr"
        )
}

/// Elements where an end tag's search for its open element stops (HTML5's default scope).
fn is_scope_boundary(tag: &[u8]) -> bool {
    matches!(
        tag,
        b"applet" | b"caption" | b"html" | b"table" | b"td" | b"th" | b"marquee" | b"object" | b"template"
    )
}

fn is_formatting(tag: &[u8]) -> bool {
    matches!(
        tag,
        b"a" | b"b"
            | b"big"
            | b"code"
            | b"em"
            | b"font"
            | b"i"
            | b"nobr"
            | b"s"
            | b"small"
            | b"strike"
            | b"strong"
            | b"tt"
            | b"u"
    )
}

/// What a table's rows and sections may hold where HTML5 does not move it out of the table.
fn is_table_structure(tag: &[u8]) -> bool {
    is_table_part(tag) || matches!(tag, b"table" | b"style" | b"script" | b"template" | b"input" | b"form")
}

fn is_table_part(tag: &[u8]) -> bool {
    matches!(tag, b"caption" | b"col" | b"colgroup" | b"tbody" | b"td" | b"tfoot" | b"th" | b"thead" | b"tr")
}

/// HTML start tags that end SVG or MathML content.
fn leaves_foreign_content(tag: &[u8]) -> bool {
    matches!(
        tag,
        b"b" | b"big"
            | b"blockquote"
            | b"body"
            | b"br"
            | b"center"
            | b"code"
            | b"dd"
            | b"div"
            | b"dl"
            | b"dt"
            | b"em"
            | b"embed"
            | b"h1"
            | b"h2"
            | b"h3"
            | b"h4"
            | b"h5"
            | b"h6"
            | b"head"
            | b"hr"
            | b"i"
            | b"img"
            | b"li"
            | b"listing"
            | b"menu"
            | b"meta"
            | b"nobr"
            | b"ol"
            | b"p"
            | b"pre"
            | b"ruby"
            | b"s"
            | b"small"
            | b"span"
            | b"strong"
            | b"strike"
            | b"sub"
            | b"sup"
            | b"table"
            | b"tt"
            | b"u"
            | b"ul"
            | b"var"
    )
}

/// Elements inside SVG or MathML whose content is read as HTML again.
fn is_integration_point(tag: &[u8]) -> bool {
    matches!(
        tag,
        b"foreignobject" | b"desc" | b"title" | b"mi" | b"mo" | b"mn" | b"ms" | b"mtext" | b"annotation-xml"
    )
}

/// Elements that belong in the head when they come before the body.
fn is_head_content(tag: &[u8]) -> bool {
    matches!(
        tag,
        b"base"
            | b"basefont"
            | b"bgsound"
            | b"link"
            | b"meta"
            | b"noframes"
            | b"script"
            | b"style"
            | b"template"
            | b"title"
    )
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    BeforeHead,
    InHead,
    InHeadNoscript,
    AfterHead,
    InBody,
}

/// How the tokenizer reads an element's content.
#[derive(Clone, Copy, PartialEq)]
enum Content {
    Markup,
    RawText,
    Rcdata,
    Plaintext,
}

struct Open {
    name: Vec<u8>,
    foreign: bool,
    /// hides its content (an invisible element, or a head element that comes after the head)
    hides: bool,
    /// a table: where text and elements HTML5 moves out of it go (before it, in `pieces`)
    foster_at: usize,
    /// an element moved before its table: the output position to go back to when it closes
    fostered_from: Option<Cursor>,
    /// where output went when the element opened (a table's content and end go there)
    opened_at: Cursor,
}

/// Where output goes: appended, or inserted before a table (foster parenting).
#[derive(Clone, Copy, PartialEq)]
enum Cursor {
    End,
    /// inserted at the foster position of the open table at this stack index
    Before(usize),
}

struct Builder {
    stack: Vec<Open>,
    cursor: Cursor,
    mode: Mode,
    /// open elements that hide their content (the head counts while it is open)
    hidden: usize,
    pre: usize,
    pieces: Vec<u8>,
}

impl Builder {
    /// Output at the cursor.
    fn emit(&mut self, bytes: &[u8]) {
        match self.cursor {
            // (a cursor naming a table no longer open writes at the end)
            Cursor::Before(table) if table >= self.stack.len() => self.pieces.extend_from_slice(bytes),
            Cursor::End => self.pieces.extend_from_slice(bytes),
            Cursor::Before(table) => {
                let at = self.stack[table].foster_at;
                self.pieces.splice(at..at, bytes.iter().copied());
                // every recorded position at or after the insertion moves with it
                for open in self.stack.iter_mut() {
                    if open.foster_at >= at {
                        open.foster_at += bytes.len();
                    }
                }
            }
        }
    }

    fn emit_byte(&mut self, byte: u8) {
        if self.cursor == Cursor::End {
            self.pieces.push(byte);
        } else {
            self.emit(&[byte]);
        }
    }

    /// Where output would go now (the position a table started at records).
    fn position(&self) -> usize {
        match self.cursor {
            Cursor::Before(table) if table < self.stack.len() => self.stack[table].foster_at,
            _ => self.pieces.len(),
        }
    }

    /// The current node is a table, or a table section or row (not a cell): HTML5 moves
    /// text and other elements that come there before the table.
    fn table_context(&self) -> Option<usize> {
        let top = self.stack.last()?;
        if top.foreign || !matches!(top.name.as_slice(), b"table" | b"tbody" | b"thead" | b"tfoot" | b"tr") {
            return None;
        }
        self.stack.iter().rposition(|o| o.name == b"table" && !o.foreign)
    }

    fn in_template(&self) -> bool {
        self.stack.iter().any(|o| o.name == b"template" && !o.foreign)
    }

    fn in_foreign(&self) -> bool {
        self.stack.last().is_some_and(|o| o.foreign && !is_integration_point(&o.name))
    }

    fn has_open(&self, name: &[u8]) -> bool {
        self.stack.iter().any(|o| o.name == name && !o.foreign)
    }

    fn push(&mut self, name: &[u8], foreign: bool) {
        self.push_hiding(name, foreign, is_skip(name));
    }

    fn push_hiding(&mut self, name: &[u8], foreign: bool, hides: bool) {
        let visible = self.hidden == 0;
        if hides {
            self.hidden += 1;
        }
        if !foreign && name == b"pre" {
            self.pre += 1;
        }
        let foster_at = self.position();
        if !foreign && visible {
            if is_block(name) {
                self.emit_byte(LINE_BREAK);
            } else if name == b"td" || name == b"th" {
                self.emit_byte(CELL);
            }
        }
        let opened_at = self.cursor;
        self.stack.push(Open {
            name: name.to_vec(),
            foreign,
            hides,
            foster_at,
            fostered_from: None,
            opened_at,
        });
    }

    fn pop(&mut self) {
        if let Some(open) = self.stack.pop() {
            // a table that closes while text is being moved before it: its end goes where
            // its content went
            if matches!(self.cursor, Cursor::Before(t) if t >= self.stack.len()) {
                self.cursor = open.opened_at;
            }
            if open.hides {
                self.hidden -= 1;
            }
            if !open.foreign {
                if open.name == b"pre" {
                    self.pre -= 1;
                }
                if self.hidden == 0 && is_block(&open.name) {
                    self.emit_byte(LINE_BREAK);
                }
            }
            if let Some(cursor) = open.fostered_from {
                self.cursor = cursor;
            }
        }
    }

    fn pop_to(&mut self, index: usize) {
        while self.stack.len() > index {
            self.pop();
        }
    }

    /// An element with no content (a void element, or one HTML5 makes for a stray end tag).
    fn empty_element(&mut self, name: &[u8]) {
        if self.hidden > 0 {
            return;
        }
        if name == b"br" {
            self.emit_byte(if self.pre > 0 { PRE_BREAK } else { LINE_BREAK });
        } else if is_block(name) {
            self.emit(&[LINE_BREAK, LINE_BREAK]);
        } else if name == b"td" || name == b"th" {
            self.emit_byte(CELL);
        }
    }

    fn text(&mut self, text: &[u8]) {
        if text.is_empty() {
            return;
        }
        let in_head_element = matches!(self.mode, Mode::InHead | Mode::InHeadNoscript)
            && self.stack.last().is_some_and(|o| o.name != b"head" && o.name != b"noscript");
        if self.mode != Mode::InBody && !in_head_element && !self.in_template() && !is_all_space(text) {
            // text before the body, outside a head element's own text: it closes the head
            // and opens the body
            let lead = skip_space(text, 0);
            self.leave_head();
            return self.text(&text[lead..]);
        }
        if self.hidden > 0 {
            return;
        }
        let saved = self.cursor;
        if !is_all_space(text) {
            if let Some(table) = self.table_context() {
                self.cursor = Cursor::Before(table);
            }
        }
        if self.pre > 0 {
            let mut line = Vec::with_capacity(text.len());
            let mut k = 0;
            while k < text.len() {
                if text[k] == b'\r' && text.get(k + 1) == Some(&b'\n') {
                    k += 1;
                    continue;
                }
                line.push(if text[k] == b'\n' { PRE_BREAK } else { text[k] });
                k += 1;
            }
            self.emit(&line);
        } else {
            self.emit(text);
        }
        self.cursor = saved;
    }

    /// Close the head (or skip it) and open the body.
    fn leave_head(&mut self) {
        if matches!(self.mode, Mode::InHead | Mode::InHeadNoscript) {
            while let Some(open) = self.stack.last() {
                let head = open.name == b"head";
                self.pop();
                if head {
                    break;
                }
            }
        }
        self.mode = Mode::InBody;
        self.push(b"body", false);
    }

    /// A start tag; returns how its content is read.
    fn start_tag(&mut self, name: &[u8], self_closing: bool) -> Content {
        // a template's content follows the body's rules wherever the template is
        let mode = if self.in_template() { Mode::InBody } else { self.mode };
        match mode {
            Mode::BeforeHead => {
                if name == b"html" {
                    return Content::Markup;
                }
                self.mode = Mode::InHead;
                self.push(b"head", false);
                if name == b"head" {
                    return Content::Markup;
                }
                return self.start_tag(name, self_closing);
            }
            Mode::InHead | Mode::InHeadNoscript | Mode::AfterHead => {
                if name == b"html" || (name == b"head" && self.mode != Mode::AfterHead) {
                    return Content::Markup;
                }
                if self.mode == Mode::InHeadNoscript {
                    if matches!(name, b"basefont" | b"bgsound" | b"link" | b"meta" | b"noframes" | b"style") {
                        return self.head_element(name);
                    }
                    // anything else ends the noscript, then is read in the head
                    self.pop();
                    self.mode = Mode::InHead;
                }
                if self.mode == Mode::AfterHead && is_head_content(name) {
                    // it still goes into the (hidden) head
                    if is_void(name) {
                        return Content::Markup;
                    }
                    self.push_hiding(name, false, true);
                    return content_of(name);
                }
                if self.mode == Mode::InHead {
                    if name == b"noscript" {
                        self.push(name, false);
                        self.mode = Mode::InHeadNoscript;
                        return Content::Markup;
                    }
                    if is_head_content(name) {
                        return self.head_element(name);
                    }
                }
                if name == b"body" {
                    if self.mode != Mode::AfterHead {
                        self.leave_head_only();
                    }
                    self.mode = Mode::InBody;
                    self.push(b"body", false);
                    return Content::Markup;
                }
                self.leave_head();
                return self.start_tag(name, self_closing);
            }
            Mode::InBody => {}
        }
        if self.in_foreign() {
            if leaves_foreign_content(name) {
                while self.in_foreign() {
                    self.pop();
                }
            } else {
                if !self_closing {
                    self.push(name, true);
                }
                return Content::Markup;
            }
        }
        if self.has_open(b"select") {
            match name {
                b"option" | b"optgroup" => {
                    if self.stack.last().is_some_and(|o| o.name == b"option") {
                        self.pop();
                    }
                    self.push(name, false);
                    return Content::Markup;
                }
                b"select" | b"input" | b"keygen" | b"textarea" => {
                    let k = self.stack.iter().rposition(|o| o.name == b"select").unwrap_or(0);
                    self.pop_to(k);
                    if name == b"select" {
                        return Content::Markup;
                    }
                }
                b"script" | b"template" => {}
                _ => return Content::Markup,
            }
        }
        if is_table_part(name) && !self.has_open(b"table") {
            return Content::Markup;
        }
        if is_table_part(name) {
            // a new cell closes the open cell of the same table, a new row or section also the
            // open row, a new section also the open section
            if let Some(k) = self.find_in_table_scope(&[b"td", b"th"]) {
                self.pop_to(k);
            }
            if name != b"td" && name != b"th" {
                if let Some(k) = self.find_in_table_scope(&[b"tr"]) {
                    self.pop_to(k);
                }
                if name != b"tr" {
                    if let Some(k) = self.find_in_table_scope(&[b"tbody", b"thead", b"tfoot"]) {
                        self.pop_to(k);
                    }
                }
            }
        }
        if let Some(table) = self.table_context() {
            if name == b"table" {
                // a table started where a table's rows go closes that table first
                self.pop_to(table);
            } else if !is_table_structure(name) {
                // HTML5 moves the element (and what it holds) before the table
                let saved = self.cursor;
                self.cursor = Cursor::Before(table);
                if is_void(name) || (self_closing && matches!(name, b"svg" | b"math")) {
                    self.empty_element(name);
                    self.cursor = saved;
                    return Content::Markup;
                }
                let content = match name {
                    b"svg" | b"math" => {
                        self.push(name, true);
                        Content::Markup
                    }
                    _ => {
                        self.push(name, false);
                        content_of(name)
                    }
                };
                if let Some(open) = self.stack.last_mut() {
                    open.fostered_from = Some(saved);
                }
                return content;
            }
        }
        match name {
            b"html" | b"head" => return Content::Markup,
            b"body" => return Content::Markup,
            b"svg" | b"math" => {
                if !self_closing {
                    self.push(name, true);
                    // the element itself hides its content
                }
                return Content::Markup;
            }
            _ => {}
        }
        if is_void(name) {
            self.empty_element(name);
            return Content::Markup;
        }
        self.push(name, false);
        content_of(name)
    }

    /// A head element (in the head: hidden).
    fn head_element(&mut self, name: &[u8]) -> Content {
        if is_void(name) {
            return Content::Markup;
        }
        self.push(name, false);
        content_of(name)
    }

    /// The head ends (by `<body>`) without opening the body yet.
    fn leave_head_only(&mut self) {
        if matches!(self.mode, Mode::InHead | Mode::InHeadNoscript) {
            while let Some(open) = self.stack.last() {
                let head = open.name == b"head";
                self.pop();
                if head {
                    break;
                }
            }
        }
    }

    fn end_tag(&mut self, name: &[u8]) {
        let mode = if self.in_template() { Mode::InBody } else { self.mode };
        match mode {
            Mode::BeforeHead => {
                if !matches!(name, b"head" | b"body" | b"html" | b"br") {
                    return;
                }
                self.mode = Mode::InHead;
                self.push(b"head", false);
                return self.end_tag(name);
            }
            Mode::InHead | Mode::InHeadNoscript => {
                let top = self.stack.last().map(|o| o.name.clone()).unwrap_or_default();
                if top != b"head" && top != b"noscript" && top == name {
                    // a raw-text element of the head closing
                    self.pop();
                    return;
                }
                if self.mode == Mode::InHeadNoscript && name == b"noscript" {
                    self.pop();
                    self.mode = Mode::InHead;
                    return;
                }
                if name == b"head" {
                    self.leave_head_only();
                    self.mode = Mode::AfterHead;
                    return;
                }
                if !matches!(name, b"body" | b"html" | b"br") {
                    return;
                }
                self.leave_head();
                return self.end_tag(name);
            }
            Mode::AfterHead => {
                if self.stack.last().is_some_and(|top| top.name == name && is_head_content(name)) {
                    self.pop();
                    return;
                }
                if !matches!(name, b"body" | b"html" | b"br") {
                    return;
                }
                self.leave_head();
                return self.end_tag(name);
            }
            Mode::InBody => {}
        }
        // in foreign content: the matching open foreign element, if any, closes
        if self.stack.last().is_some_and(|o| o.foreign) {
            if let Some(k) = self.stack.iter().rposition(|o| o.foreign && o.name == name) {
                if self.stack[k..].iter().all(|o| o.foreign) {
                    self.pop_to(k);
                    return;
                }
            }
        }
        if self.has_open(b"select") && !matches!(name, b"option" | b"optgroup" | b"select" | b"template") {
            return;
        }
        match name {
            b"body" | b"html" => return,
            b"br" => return self.empty_element(b"br"),
            b"p" => {
                if let Some(k) = self.find_in_scope(name) {
                    self.pop_to(k);
                } else {
                    self.empty_element(b"p");
                }
                return;
            }
            b"h1" | b"h2" | b"h3" | b"h4" | b"h5" | b"h6" => {
                if let Some(k) = self.stack.iter().rposition(|o| {
                    !o.foreign && matches!(o.name.as_slice(), b"h1" | b"h2" | b"h3" | b"h4" | b"h5" | b"h6")
                }) {
                    self.pop_to(k);
                }
                return;
            }
            _ => {}
        }
        if is_formatting(name) {
            // the adoption agency, as far as text goes: without a block opened inside the
            // formatting element it closes like any element; with one, that block stays open
            // and takes the text that follows
            if let Some(k) = self.stack.iter().rposition(|o| o.name == name && !o.foreign) {
                if self.stack[k + 1..].iter().any(|o| is_special(&o.name)) {
                    let open = self.stack.remove(k);
                    if open.hides {
                        self.hidden -= 1;
                    }
                    // what it held stays where it was moved to until the element that takes
                    // its place closes
                    if let (Some(cursor), Some(next)) = (open.fostered_from, self.stack.get_mut(k)) {
                        next.fostered_from.get_or_insert(cursor);
                    }
                    // cursors name open tables by their place in the stack: those above moved
                    let shift = |cursor: &mut Cursor| {
                        if let Cursor::Before(t) = cursor {
                            if *t > k {
                                *t -= 1;
                            }
                        }
                    };
                    shift(&mut self.cursor);
                    for open in self.stack.iter_mut() {
                        shift(&mut open.opened_at);
                        if let Some(cursor) = open.fostered_from.as_mut() {
                            shift(cursor);
                        }
                    }
                } else {
                    self.pop_to(k);
                }
            }
            return;
        }
        if is_table_part(name) || name == b"table" {
            // table parts close through the cells and rows inside them (table scope)
            if let Some(k) = self.find_in_table_scope(&[name]) {
                self.pop_to(k);
            }
            return;
        }
        if is_special(name) {
            if let Some(k) = self.find_in_scope(name) {
                self.pop_to(k);
            }
            return;
        }
        // any other end tag: the nearest open element of that name, unless a special
        // element comes first
        for k in (0..self.stack.len()).rev() {
            if self.stack[k].name == name && !self.stack[k].foreign {
                self.pop_to(k);
                return;
            }
            if is_special(&self.stack[k].name) {
                return;
            }
        }
    }

    /// The nearest open element named one of `names` inside the current table (HTML5's
    /// table scope: the search stops at a table, the root or a template).
    fn find_in_table_scope(&self, names: &[&[u8]]) -> Option<usize> {
        for k in (0..self.stack.len()).rev() {
            let open = &self.stack[k];
            if !open.foreign && names.contains(&open.name.as_slice()) {
                return Some(k);
            }
            if open.foreign || matches!(open.name.as_slice(), b"table" | b"html" | b"template") {
                return None;
            }
        }
        None
    }

    fn find_in_scope(&self, name: &[u8]) -> Option<usize> {
        for k in (0..self.stack.len()).rev() {
            let open = &self.stack[k];
            if open.name == name && !open.foreign {
                return Some(k);
            }
            if is_scope_boundary(&open.name) || open.foreign {
                return None;
            }
        }
        None
    }
}

fn content_of(name: &[u8]) -> Content {
    match name {
        b"script" | b"style" | b"xmp" | b"iframe" | b"noembed" | b"noframes" => Content::RawText,
        b"title" | b"textarea" => Content::Rcdata,
        b"plaintext" => Content::Plaintext,
        _ => Content::Markup,
    }
}

fn is_all_space(text: &[u8]) -> bool {
    text.iter().all(|&c| matches!(c, b' ' | b'\t' | b'\n' | 0x0c | b'\r'))
}

/// HTML5's input preprocessing: CR LF and lone CR become LF.
fn normalize_newlines(html: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    if !html.contains(&b'\r') {
        return std::borrow::Cow::Borrowed(html);
    }
    let mut out = Vec::with_capacity(html.len());
    let mut k = 0;
    while k < html.len() {
        if html[k] == b'\r' {
            out.push(b'\n');
            if html.get(k + 1) == Some(&b'\n') {
                k += 1;
            }
        } else {
            out.push(html[k]);
        }
        k += 1;
    }
    std::borrow::Cow::Owned(out)
}

/// A character reference in text at `amp` (HTML5's rules for text, not attributes): its
/// characters into `out` and where it ends, or None (the `&` is text).
fn char_reference(b: &[u8], amp: usize, out: &mut Vec<u8>) -> Option<usize> {
    let mut k = amp + 1;
    if b.get(k) == Some(&b'#') {
        k += 1;
        let hex = matches!(b.get(k), Some(b'x' | b'X'));
        if hex {
            k += 1;
        }
        let start = k;
        let mut value: u64 = 0;
        while k < b.len() && (if hex { b[k].is_ascii_hexdigit() } else { b[k].is_ascii_digit() }) {
            value = (value * if hex { 16 } else { 10 } + (b[k] as char).to_digit(16).unwrap_or(0) as u64)
                .min(0x11_0000);
            k += 1;
        }
        if k == start {
            return None;
        }
        if b.get(k) == Some(&b';') {
            k += 1;
        }
        let mut c = value as u32;
        if c == 0 || c > 0x10ffff || (0xd800..=0xdfff).contains(&c) {
            c = 0xfffd;
        }
        if let Ok(i) = crate::py_tables::CONTROL_CHARACTER_REPLACEMENTS.binary_search_by(|&(f, _)| f.cmp(&c))
        {
            c = crate::py_tables::CONTROL_CHARACTER_REPLACEMENTS[i].1;
        }
        push_char(out, c);
        return Some(k);
    }
    // the longest name in the table (with or without its ";")
    let mut end = k;
    while end < b.len() && end - k < 32 && b[end].is_ascii_alphanumeric() {
        end += 1;
    }
    if b.get(end) == Some(&b';') {
        end += 1;
    }
    while end > k {
        if let Some(text) = html5(&b[k..end]) {
            out.extend_from_slice(text.as_bytes());
            return Some(end);
        }
        end -= 1;
    }
    None
}

/// Text of a markup run, character references decoded; NULs dropped (HTML5 ignores them in
/// the body) or, in RCDATA (`rcdata`), replaced.
fn decode_text(b: &[u8], out: &mut Vec<u8>, rcdata: bool) {
    let mut k = 0;
    while k < b.len() {
        match b[k] {
            b'&' => match char_reference(b, k, out) {
                Some(end) => k = end,
                None => {
                    out.push(b'&');
                    k += 1;
                }
            },
            0 => {
                if rcdata {
                    out.extend_from_slice("\u{fffd}".as_bytes());
                }
                k += 1;
            }
            c => {
                out.push(c);
                k += 1;
            }
        }
    }
}

/// Where a raw-text or RCDATA element named `name` ends: its `</name` (ASCII case-insensitive)
/// followed by white space, `/` or `>`.
fn raw_text_end(b: &[u8], from: usize, name: &[u8]) -> Option<usize> {
    let mut i = from;
    while let Some(k) = b[i..].windows(2).position(|w| w == b"</") {
        let lt = i + k;
        let end = lt + 2 + name.len();
        if end <= b.len()
            && b[lt + 2..end].eq_ignore_ascii_case(name)
            && matches!(b.get(end), Some(b' ' | b'\t' | b'\n' | 0x0c | b'/' | b'>'))
        {
            return Some(lt);
        }
        i = lt + 2;
    }
    None
}

/// A tag at `lt` (`<` then a letter, or `</` then a letter): its lowercased name, whether it
/// is self-closing, and where it ends; None when the input ends inside it (HTML5 drops it).
fn read_tag(b: &[u8], lt: usize, end_tag: bool) -> Option<(Vec<u8>, bool, usize)> {
    let mut k = lt + if end_tag { 2 } else { 1 };
    let start = k;
    while k < b.len() && !matches!(b[k], b' ' | b'\t' | b'\n' | 0x0c | b'/' | b'>') {
        k += 1;
    }
    let name: Vec<u8> = b[start..k].iter().filter(|&&c| c != 0).map(|c| c.to_ascii_lowercase()).collect();
    // attributes: names, then "=" and a quoted or bare value
    let mut self_closing = false;
    loop {
        while k < b.len() && matches!(b[k], b' ' | b'\t' | b'\n' | 0x0c) {
            k += 1;
        }
        match b.get(k)? {
            b'>' => return Some((name, self_closing, k + 1)),
            b'/' => {
                k += 1;
                self_closing = b.get(k) == Some(&b'>');
                continue;
            }
            _ => {}
        }
        self_closing = false;
        // the attribute name (a first "=" belongs to it)
        k += 1;
        while k < b.len() && !matches!(b[k], b' ' | b'\t' | b'\n' | 0x0c | b'/' | b'>' | b'=') {
            k += 1;
        }
        while k < b.len() && matches!(b[k], b' ' | b'\t' | b'\n' | 0x0c) {
            k += 1;
        }
        if b.get(k) != Some(&b'=') {
            continue;
        }
        k += 1;
        while k < b.len() && matches!(b[k], b' ' | b'\t' | b'\n' | 0x0c) {
            k += 1;
        }
        match b.get(k)? {
            &q @ (b'"' | b'\'') => {
                let close = b[k + 1..].iter().position(|&c| c == q)?;
                k += close + 2;
            }
            _ => {
                while k < b.len() && !matches!(b[k], b' ' | b'\t' | b'\n' | 0x0c | b'>') {
                    k += 1;
                }
            }
        }
    }
}

/// `to_text(html)`.
pub fn to_text(html: &[u8]) -> Vec<u8> {
    if strip(html).is_empty() {
        return Vec::new();
    }
    let html = normalize_newlines(html);
    let b: &[u8] = &html;
    let mut builder = Builder {
        stack: Vec::new(),
        cursor: Cursor::End,
        mode: Mode::BeforeHead,
        hidden: 0,
        pre: 0,
        pieces: Vec::with_capacity(b.len() / 2),
    };
    let mut decoded = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let lt = b[i..].iter().position(|&c| c == b'<').map_or(b.len(), |k| i + k);
        if lt > i {
            decoded.clear();
            decode_text(&b[i..lt], &mut decoded, false);
            builder.text(&decoded);
        }
        i = lt;
        if i >= b.len() {
            break;
        }
        let next = b.get(i + 1).copied();
        match next {
            Some(c) if c.is_ascii_alphabetic() => {
                let Some((name, self_closing, end)) = read_tag(b, i, false) else { break };
                i = end;
                let content = builder.start_tag(&name, self_closing);
                match content {
                    Content::Markup => {}
                    Content::Plaintext => {
                        builder.text(&replace_nul(&b[i..]));
                        i = b.len();
                    }
                    Content::RawText | Content::Rcdata => {
                        let close = raw_text_end(b, i, &name).unwrap_or(b.len());
                        decoded.clear();
                        if content == Content::Rcdata {
                            decode_text(&b[i..close], &mut decoded, true);
                        } else {
                            decoded.extend_from_slice(&b[i..close]);
                        }
                        builder.text(&replace_nul(&decoded));
                        i = close;
                    }
                }
            }
            Some(b'/') => match b.get(i + 2) {
                Some(c) if c.is_ascii_alphabetic() => {
                    let Some((name, _, end)) = read_tag(b, i, true) else { break };
                    i = end;
                    builder.end_tag(&name);
                }
                Some(b'>') => i += 3,
                None => {
                    builder.text(b"</");
                    break;
                }
                _ => i = skip_to_gt(b, i + 2),
            },
            Some(b'!') => {
                i = if b[i..].starts_with(b"<!--") { comment_end(b, i + 4) } else { skip_to_gt(b, i + 2) };
            }
            Some(b'?') => i = skip_to_gt(b, i + 2),
            _ => {
                builder.text(b"<");
                i += 1;
            }
        }
    }
    lines_of(&builder.pieces)
}

fn replace_nul(text: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    if !text.contains(&0) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = Vec::with_capacity(text.len() + 2);
    for &c in text {
        if c == 0 {
            out.extend_from_slice("\u{fffd}".as_bytes());
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

fn skip_to_gt(b: &[u8], from: usize) -> usize {
    b[from.min(b.len())..].iter().position(|&c| c == b'>').map_or(b.len(), |k| from + k + 1)
}

/// The end of a comment whose body starts at `from` (`-->`, or `>` / `->` right away).
fn comment_end(b: &[u8], from: usize) -> usize {
    if b[from..].starts_with(b">") {
        return from + 1;
    }
    if b[from..].starts_with(b"->") {
        return from + 2;
    }
    let mut k = from;
    while let Some(p) = b[k..].windows(3).position(|w| w == b"-->" || w == b"--!") {
        let at = k + p;
        if &b[at..at + 3] == b"-->" {
            return at + 3;
        }
        if b.get(at + 3) == Some(&b'>') {
            return at + 4;
        }
        k = at + 1;
    }
    b.len()
}

/// The Python version's last step: lines at the line marks, then at `<pre>` breaks; cells
/// whitespace-collapsed and stripped, joined with " | "; empty lines dropped.
fn lines_of(pieces: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(pieces.len());
    for line in pieces.split(|&c| c == LINE_BREAK) {
        for part in line.split(|&c| c == PRE_BREAK) {
            let mut first = true;
            let start = out.len();
            for cell in part.split(|&c| c == CELL) {
                let collapsed = collapse_whitespace(cell);
                let cell = strip(&collapsed);
                if cell.is_empty() {
                    continue;
                }
                if first {
                    if start > 0 {
                        out.push(b'\n');
                    }
                    first = false;
                } else {
                    out.extend_from_slice(b" | ");
                }
                out.extend_from_slice(cell);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(html: &str) -> String {
        String::from_utf8(to_text(html.as_bytes())).unwrap()
    }

    #[test]
    fn text_shape() {
        let html = "<html><head><title>no</title><style>p{}</style></head><body>\
            <h1> A  title </h1><p>First\n  para<br>second line</p><script>var x;</script>\
            <ul><li>one</li><li>two <b>bold</b></li></ul>\
            <table><tr><th>h1</th><th>h2</th></tr><tr><td>a</td><td></td><td>c</td></tr></table>\
            <pre>code  line1\nline2</pre><div>x<span>y</span></div></body></html>";
        assert_eq!(
            text(html),
            "A title\nFirst para\nsecond line\none\ntwo bold\nh1 | h2\na | c\ncode line1\nline2\nxy"
        );
        assert_eq!(text("   "), "");
        assert_eq!(text("<html></html>"), "");
    }

    #[test]
    fn html5_moves_and_markers() {
        // text in a table's rows goes before the table (foster parenting), elements too
        assert_eq!(text("<table><tr><td>a</td></tr>b</table>"), "b\na");
        assert_eq!(text("<table><tr><td>a<p>b</tr>c</table>"), "c\na\nb");
        assert_eq!(text("<head><title>t</title></head><p>x</p>"), "x");
        // a character that is the cell marker splits like a cell, as in the Python version
        assert_eq!(text("<p>a&#1;b</p>"), "a | b");
    }
}
