//! The few parts of an ONNX file a tree ensemble needs, read straight from its protobuf bytes:
//! `ModelProto` (opset imports, graph), `GraphProto` (nodes, inputs, outputs, initializers'
//! names), `NodeProto` (op type, domain, inputs, outputs, attributes), `AttributeProto`
//! (scalars, lists, strings, one tensor) and the float/double/int64 contents of a `TensorProto`.
//! Field numbers are those of `onnx/onnx.proto` (proto2: repeated scalars may come packed or
//! one per tag; both are read). Fields not listed are skipped.

/// Why a file cannot be read as an ONNX model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError(pub String);

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn error<T>(message: impl Into<String>) -> Result<T, ParseError> {
    Err(ParseError(message.into()))
}

/// One protobuf field's value as it is on the wire.
#[derive(Clone, Copy, Debug)]
enum Wire<'a> {
    Varint(u64),
    Fixed64(u64),
    Bytes(&'a [u8]),
    Fixed32(u32),
}

/// The fields of one message, in order.
struct Fields<'a> {
    bytes: &'a [u8],
    at: usize,
}

fn fields(bytes: &[u8]) -> Fields<'_> {
    Fields { bytes, at: 0 }
}

impl<'a> Fields<'a> {
    /// The next varint. Most of a tree ensemble's (node ids, features, flags, keys) are one
    /// byte: read here, in the caller's loop; longer ones in `varint_long`.
    #[inline]
    fn varint(&mut self) -> Result<u64, ParseError> {
        match self.bytes.get(self.at) {
            Some(&byte) if byte & 0x80 == 0 => {
                self.at += 1;
                Ok(u64::from(byte))
            }
            _ => self.varint_long(),
        }
    }

    fn varint_long(&mut self) -> Result<u64, ParseError> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let Some(&byte) = self.bytes.get(self.at) else {
                return error("truncated varint");
            };
            self.at += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        error("varint longer than 10 bytes")
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], ParseError> {
        let end = self.at.checked_add(n).filter(|&end| end <= self.bytes.len());
        let Some(end) = end else {
            return error(format!("a field of {n} bytes runs past the end of its message"));
        };
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    /// Steps over the next field's key when it is the one byte `key` (its field number and
    /// wire type): a repeated field's next value, as proto2 writes a list, one tag a value.
    fn next_is(&mut self, key: u8) -> bool {
        let found = self.bytes.get(self.at) == Some(&key);
        self.at += usize::from(found);
        found
    }

    fn next_field(&mut self) -> Option<Result<(u32, Wire<'a>), ParseError>> {
        if self.at >= self.bytes.len() {
            return None;
        }
        Some((|| {
            let key = self.varint()?;
            let number = (key >> 3) as u32;
            let wire = match key & 7 {
                0 => Wire::Varint(self.varint()?),
                1 => Wire::Fixed64(u64::from_le_bytes(self.take(8)?.try_into().unwrap())),
                2 => {
                    let len = self.varint()? as usize;
                    Wire::Bytes(self.take(len)?)
                }
                5 => Wire::Fixed32(u32::from_le_bytes(self.take(4)?.try_into().unwrap())),
                other => return error(format!("field {number} has wire type {other} (groups are not read)")),
            };
            Ok((number, wire))
        })())
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<(u32, Wire<'a>), ParseError>;
    fn next(&mut self) -> Option<Self::Item> {
        let item = self.next_field();
        if matches!(item, Some(Err(_))) {
            self.at = self.bytes.len(); // stop after an error
        }
        item
    }
}

fn string(wire: Wire<'_>, what: &str) -> Result<String, ParseError> {
    match wire {
        Wire::Bytes(bytes) => match std::str::from_utf8(bytes) {
            Ok(text) => Ok(text.to_string()),
            Err(_) => error(format!("{what} is not UTF-8")),
        },
        _ => error(format!("{what} is not a length-delimited field")),
    }
}

fn bytes<'a>(wire: Wire<'a>, what: &str) -> Result<&'a [u8], ParseError> {
    match wire {
        Wire::Bytes(bytes) => Ok(bytes),
        _ => error(format!("{what} is not a length-delimited field")),
    }
}

fn varint(wire: Wire<'_>, what: &str) -> Result<u64, ParseError> {
    match wire {
        Wire::Varint(value) => Ok(value),
        _ => error(format!("{what} is not a varint")),
    }
}

/// Appends a repeated varint field's values (one tag each, or packed).
fn push_varints(out: &mut Vec<i64>, wire: Wire<'_>, what: &str) -> Result<(), ParseError> {
    match wire {
        Wire::Varint(value) => out.push(value as i64),
        Wire::Bytes(packed) => {
            let mut reader = fields(packed);
            while reader.at < packed.len() {
                out.push(reader.varint()? as i64);
            }
        }
        _ => return error(format!("{what} holds neither varints nor packed varints")),
    }
    Ok(())
}

/// Appends a repeated float field's values (one tag each, or packed).
fn push_floats(out: &mut Vec<f32>, wire: Wire<'_>, what: &str) -> Result<(), ParseError> {
    match wire {
        Wire::Fixed32(bits) => out.push(f32::from_bits(bits)),
        Wire::Bytes(packed) if packed.len() % 4 == 0 => {
            out.extend(packed.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())))
        }
        _ => return error(format!("{what} holds neither floats nor packed floats")),
    }
    Ok(())
}

/// Appends a repeated double field's values (one tag each, or packed).
fn push_doubles(out: &mut Vec<f64>, wire: Wire<'_>, what: &str) -> Result<(), ParseError> {
    match wire {
        Wire::Fixed64(bits) => out.push(f64::from_bits(bits)),
        Wire::Bytes(packed) if packed.len() % 8 == 0 => {
            out.extend(packed.chunks_exact(8).map(|b| f64::from_le_bytes(b.try_into().unwrap())))
        }
        _ => return error(format!("{what} holds neither doubles nor packed doubles")),
    }
    Ok(())
}

/// `TensorProto.DataType` values read here.
pub const TENSOR_FLOAT: i32 = 1;
pub const TENSOR_INT64: i32 = 7;
pub const TENSOR_DOUBLE: i32 = 11;

/// A `TensorProto`'s element type, shape and values (float, double and int64 tensors; the
/// values from `raw_data` or the typed fields).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tensor {
    pub name: String,
    pub data_type: i32,
    pub dims: Vec<i64>,
    pub floats: Vec<f32>,
    pub doubles: Vec<f64>,
    pub int64s: Vec<i64>,
}

fn tensor(message: &[u8]) -> Result<Tensor, ParseError> {
    let mut out = Tensor::default();
    let mut raw: Option<&[u8]> = None;
    for field in fields(message) {
        let (number, wire) = field?;
        match number {
            1 => push_varints(&mut out.dims, wire, "TensorProto.dims")?,
            2 => out.data_type = varint(wire, "TensorProto.data_type")? as i32,
            4 => push_floats(&mut out.floats, wire, "TensorProto.float_data")?,
            7 => push_varints(&mut out.int64s, wire, "TensorProto.int64_data")?,
            8 => out.name = string(wire, "TensorProto.name")?,
            9 => raw = Some(bytes(wire, "TensorProto.raw_data")?),
            10 => push_doubles(&mut out.doubles, wire, "TensorProto.double_data")?,
            14 => return error(format!("tensor '{}' keeps its data outside the file", out.name)),
            _ => {}
        }
    }
    if let Some(raw) = raw {
        let width = match out.data_type {
            TENSOR_FLOAT => 4,
            TENSOR_INT64 | TENSOR_DOUBLE => 8,
            _ => 0,
        };
        if width == 0 || raw.len() % width != 0 {
            return error(format!("tensor '{}': raw data of type {} not read", out.name, out.data_type));
        }
        match out.data_type {
            TENSOR_FLOAT => {
                out.floats = raw.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect()
            }
            TENSOR_DOUBLE => {
                out.doubles = raw.chunks_exact(8).map(|b| f64::from_le_bytes(b.try_into().unwrap())).collect()
            }
            _ => {
                out.int64s = raw.chunks_exact(8).map(|b| i64::from_le_bytes(b.try_into().unwrap())).collect()
            }
        }
    }
    Ok(out)
}

/// `AttributeProto.AttributeType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttributeType {
    Undefined,
    Float,
    Int,
    String,
    Tensor,
    Floats,
    Ints,
    Strings,
    Other(i64),
}

impl AttributeType {
    fn from_code(code: i64) -> AttributeType {
        match code {
            0 => AttributeType::Undefined,
            1 => AttributeType::Float,
            2 => AttributeType::Int,
            3 => AttributeType::String,
            4 => AttributeType::Tensor,
            6 => AttributeType::Floats,
            7 => AttributeType::Ints,
            8 => AttributeType::Strings,
            other => AttributeType::Other(other),
        }
    }
}

/// One node attribute: whichever of its value fields the file sets (strings borrowed from the
/// file's bytes: a tree ensemble's `nodes_modes` is a string per node).
#[derive(Clone, Debug, PartialEq)]
pub struct Attribute<'a> {
    pub name: String,
    pub kind: AttributeType,
    pub f: f32,
    pub i: i64,
    pub s: &'a [u8],
    pub t: Option<Tensor>,
    pub floats: Vec<f32>,
    pub ints: Vec<i64>,
    pub strings: Vec<&'a [u8]>,
    /// `ref_attr_name`: a function's attribute reference (not a value)
    pub reference: Option<String>,
}

/// The one-byte keys (field number << 3 | wire type) of `AttributeProto`'s repeated `floats`
/// (7, fixed32), `ints` (8, varint) and `strings` (9, length-delimited), one value a tag.
const KEY_FLOAT: u8 = 7 << 3 | 5;
const KEY_INT: u8 = 8 << 3;
const KEY_STRING: u8 = 9 << 3 | 2;

/// Appends the floats of the run of `KEY_FLOAT` fields `bytes` starts with (five bytes each);
/// the bytes read. A tree ensemble's thresholds and weights are such a run, a value per node.
fn rest_of_floats(bytes: &[u8], out: &mut Vec<f32>) -> usize {
    let fields = bytes.chunks_exact(5).take_while(|field| field[0] == KEY_FLOAT);
    out.reserve(bytes.len() / 5);
    let before = out.len();
    out.extend(fields.map(|field| f32::from_le_bytes([field[1], field[2], field[3], field[4]])));
    (out.len() - before) * 5
}

/// Appends the values of the run of `KEY_INT` fields of one- and two-byte varints (below
/// 16384) that `bytes` starts with; the bytes read. Nearly all of a tree ensemble's ints are
/// such (tree and node ids, features, flags), under a tag each.
fn rest_of_short_ints(bytes: &[u8], out: &mut Vec<i64>) -> usize {
    out.reserve(bytes.len() / 2);
    let mut at = 0;
    loop {
        match bytes[at..] {
            [KEY_INT, low, ..] if low < 0x80 => {
                out.push(i64::from(low));
                at += 2;
            }
            [KEY_INT, low, high, ..] if high < 0x80 => {
                out.push(i64::from(low & 0x7f) | i64::from(high) << 7);
                at += 3;
            }
            _ => return at,
        }
    }
}

/// Appends the strings of the run of `KEY_STRING` fields shorter than 128 bytes that `bytes`
/// starts with (each within `bytes`); the bytes read. A tree ensemble's node modes are such a
/// run.
fn rest_of_short_strings<'a>(bytes: &'a [u8], out: &mut Vec<&'a [u8]>) -> usize {
    let mut at = 0;
    while let [KEY_STRING, len, ..] = bytes[at..] {
        let (start, end) = (at + 2, at + 2 + usize::from(len));
        if len >= 0x80 || end > bytes.len() {
            break;
        }
        out.push(&bytes[start..end]);
        at = end;
    }
    at
}

fn attribute(message: &[u8]) -> Result<Attribute<'_>, ParseError> {
    let mut out = Attribute {
        name: String::new(),
        kind: AttributeType::Undefined,
        f: 0.0,
        i: 0,
        s: &[],
        t: None,
        floats: Vec::new(),
        ints: Vec::new(),
        strings: Vec::new(),
        reference: None,
    };
    let mut reader = fields(message);
    while let Some(field) = reader.next() {
        let (number, wire) = field?;
        match number {
            1 => out.name = string(wire, "AttributeProto.name")?,
            2 => match wire {
                Wire::Fixed32(bits) => out.f = f32::from_bits(bits),
                _ => return error("AttributeProto.f is not a float"),
            },
            3 => out.i = varint(wire, "AttributeProto.i")? as i64,
            4 => out.s = bytes(wire, "AttributeProto.s")?,
            5 => out.t = Some(tensor(bytes(wire, "AttributeProto.t")?)?),
            // a tree ensemble's lists hold a value per node, tens of thousands, each under its
            // own tag: the rest of a run of one field is read here, not field by field
            7 => {
                push_floats(&mut out.floats, wire, "AttributeProto.floats")?;
                loop {
                    reader.at += rest_of_floats(&reader.bytes[reader.at..], &mut out.floats);
                    if !reader.next_is(KEY_FLOAT) {
                        break;
                    }
                    // (a value cut short by the message's end: an error)
                    out.floats.push(f32::from_le_bytes(Fields::take(&mut reader, 4)?.try_into().unwrap()));
                }
            }
            8 => {
                push_varints(&mut out.ints, wire, "AttributeProto.ints")?;
                loop {
                    reader.at += rest_of_short_ints(&reader.bytes[reader.at..], &mut out.ints);
                    if !reader.next_is(KEY_INT) {
                        break;
                    }
                    out.ints.push(reader.varint()? as i64); // a longer one
                }
            }
            9 => {
                out.strings.push(bytes(wire, "AttributeProto.strings")?);
                loop {
                    reader.at += rest_of_short_strings(&reader.bytes[reader.at..], &mut out.strings);
                    if !reader.next_is(KEY_STRING) {
                        break;
                    }
                    let len = reader.varint()? as usize;
                    out.strings.push(Fields::take(&mut reader, len)?);
                }
            }
            20 => out.kind = AttributeType::from_code(varint(wire, "AttributeProto.type")? as i64),
            21 => out.reference = Some(string(wire, "AttributeProto.ref_attr_name")?),
            _ => {}
        }
    }
    Ok(out)
}

/// One graph node.
#[derive(Clone, Debug, PartialEq)]
pub struct Node<'a> {
    pub name: String,
    pub op_type: String,
    pub domain: String,
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
    pub attributes: Vec<Attribute<'a>>,
}

impl<'a> Node<'a> {
    pub fn attribute(&self, name: &str) -> Option<&Attribute<'a>> {
        self.attributes.iter().find(|a| a.name == name)
    }
}

fn node(message: &[u8]) -> Result<Node<'_>, ParseError> {
    let mut out = Node {
        name: String::new(),
        op_type: String::new(),
        domain: String::new(),
        inputs: Vec::new(),
        outputs: Vec::new(),
        attributes: Vec::new(),
    };
    for field in fields(message) {
        let (number, wire) = field?;
        match number {
            1 => out.inputs.push(string(wire, "NodeProto.input")?),
            2 => out.outputs.push(string(wire, "NodeProto.output")?),
            3 => out.name = string(wire, "NodeProto.name")?,
            4 => out.op_type = string(wire, "NodeProto.op_type")?,
            5 => out.attributes.push(attribute(bytes(wire, "NodeProto.attribute")?)?),
            7 => out.domain = string(wire, "NodeProto.domain")?,
            _ => {}
        }
    }
    Ok(out)
}

/// A graph input or output: its name, element type and dimensions (`None`: symbolic or
/// absent) when it is a tensor.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ValueInfo {
    pub name: String,
    /// `TensorProto.DataType` of a tensor value, else 0
    pub element: i32,
    pub dims: Vec<Option<i64>>,
}

fn value_info(message: &[u8]) -> Result<ValueInfo, ParseError> {
    let mut out = ValueInfo::default();
    for field in fields(message) {
        let (number, wire) = field?;
        match number {
            1 => out.name = string(wire, "ValueInfoProto.name")?,
            2 => {
                // TypeProto.tensor_type (1): elem_type (1), shape (2) of dims (1): dim_value (1)
                for field in fields(bytes(wire, "ValueInfoProto.type")?) {
                    let (number, wire) = field?;
                    if number != 1 {
                        continue;
                    }
                    for field in fields(bytes(wire, "TypeProto.tensor_type")?) {
                        let (number, wire) = field?;
                        match number {
                            1 => out.element = varint(wire, "TypeProto.Tensor.elem_type")? as i32,
                            2 => {
                                for field in fields(bytes(wire, "TensorShapeProto")?) {
                                    let (number, wire) = field?;
                                    if number != 1 {
                                        continue;
                                    }
                                    let mut dim = None;
                                    for field in fields(bytes(wire, "TensorShapeProto.dim")?) {
                                        let (number, wire) = field?;
                                        if number == 1 {
                                            dim = Some(varint(wire, "Dimension.dim_value")? as i64);
                                        }
                                    }
                                    out.dims.push(dim);
                                }
                            }
                            _ => {}
                        }
                    }
                }
            }
            _ => {}
        }
    }
    Ok(out)
}

/// The graph of a model.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Graph<'a> {
    pub nodes: Vec<Node<'a>>,
    pub inputs: Vec<ValueInfo>,
    pub outputs: Vec<ValueInfo>,
    pub initializers: Vec<Tensor>,
}

fn graph(message: &[u8]) -> Result<Graph<'_>, ParseError> {
    let mut out = Graph::default();
    for field in fields(message) {
        let (number, wire) = field?;
        match number {
            1 => out.nodes.push(node(bytes(wire, "GraphProto.node")?)?),
            5 => out.initializers.push(tensor(bytes(wire, "GraphProto.initializer")?)?),
            11 => out.inputs.push(value_info(bytes(wire, "GraphProto.input")?)?),
            12 => out.outputs.push(value_info(bytes(wire, "GraphProto.output")?)?),
            15 => return error("the graph holds sparse initializers"),
            _ => {}
        }
    }
    Ok(out)
}

/// A model: its opset imports (domain, version) and its graph (borrowing the file's bytes).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Model<'a> {
    pub opsets: Vec<(String, i64)>,
    pub graph: Graph<'a>,
    /// the model declares local functions (not read: a node could call one)
    pub has_functions: bool,
}

impl Model<'_> {
    /// The opset version the model imports for `domain` ("" and "ai.onnx" are the same).
    pub fn opset(&self, domain: &str) -> Option<i64> {
        let wanted = if domain == "ai.onnx" { "" } else { domain };
        self.opsets
            .iter()
            .find(|(d, _)| (if d == "ai.onnx" { "" } else { d.as_str() }) == wanted)
            .map(|(_, v)| *v)
    }
}

/// Reads a serialized `ModelProto`.
pub fn parse_model(bytes_in: &[u8]) -> Result<Model<'_>, ParseError> {
    let mut out = Model::default();
    let mut seen_graph = false;
    for field in fields(bytes_in) {
        let (number, wire) = field?;
        match number {
            7 => {
                out.graph = graph(bytes(wire, "ModelProto.graph")?)?;
                seen_graph = true;
            }
            8 => {
                let mut domain = String::new();
                let mut version = 0;
                for field in fields(bytes(wire, "ModelProto.opset_import")?) {
                    let (number, wire) = field?;
                    match number {
                        1 => domain = string(wire, "OperatorSetIdProto.domain")?,
                        2 => version = varint(wire, "OperatorSetIdProto.version")? as i64,
                        _ => {}
                    }
                }
                out.opsets.push((domain, version));
            }
            25 => out.has_functions = true,
            _ => {}
        }
    }
    if !seen_graph {
        return error("no graph: not an ONNX model");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(number: u32, wire: u8) -> Vec<u8> {
        encode_varint(u64::from(number) << 3 | u64::from(wire))
    }

    fn encode_varint(mut value: u64) -> Vec<u8> {
        let mut out = Vec::new();
        loop {
            let byte = (value & 0x7f) as u8;
            value >>= 7;
            if value == 0 {
                out.push(byte);
                return out;
            }
            out.push(byte | 0x80);
        }
    }

    fn length_delimited(number: u32, body: &[u8]) -> Vec<u8> {
        let mut out = key(number, 2);
        out.extend(encode_varint(body.len() as u64));
        out.extend_from_slice(body);
        out
    }

    #[test]
    fn repeated_scalars_read_packed_and_unpacked() {
        let mut attr = length_delimited(1, b"nodes_values");
        attr.extend(key(7, 5));
        attr.extend(1.5f32.to_le_bytes());
        let packed: Vec<u8> = [2.5f32, -3.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        attr.extend(length_delimited(7, &packed));
        attr.extend(key(8, 0));
        attr.extend(encode_varint(300));
        attr.extend(length_delimited(8, &[encode_varint(7), encode_varint(u64::MAX)].concat()));
        let parsed = attribute(&attr).unwrap();
        assert_eq!(parsed.name, "nodes_values");
        assert_eq!(parsed.floats, vec![1.5, 2.5, -3.0]);
        assert_eq!(parsed.ints, vec![300, 7, -1]);
    }

    #[test]
    fn runs_of_one_tag_a_value_read_whole_and_in_order() {
        // as proto2 writes a tree ensemble's lists: each value under its own tag, runs of one
        // field, another field between runs, a packed list after a run
        let mut attr = Vec::new();
        for v in [0.5f32, -1.0, 2.0] {
            attr.extend(key(7, 5));
            attr.extend(v.to_le_bytes());
        }
        for v in [1u64, 300, u64::MAX] {
            attr.extend(key(8, 0));
            attr.extend(encode_varint(v));
        }
        for s in [&b"BRANCH_LEQ"[..], b"", b"LEAF"] {
            attr.extend(length_delimited(9, s));
        }
        attr.extend(length_delimited(1, b"nodes_modes"));
        attr.extend(key(8, 0));
        attr.extend(encode_varint(5));
        attr.extend(length_delimited(8, &[encode_varint(6), encode_varint(7)].concat()));
        attr.extend(key(8, 0));
        attr.extend(encode_varint(8));
        attr.extend(key(7, 5));
        attr.extend(4.0f32.to_le_bytes());
        let parsed = attribute(&attr).unwrap();
        assert_eq!(parsed.name, "nodes_modes");
        assert_eq!(parsed.floats, vec![0.5, -1.0, 2.0, 4.0]);
        assert_eq!(parsed.ints, vec![1, 300, -1, 5, 6, 7, 8]);
        assert_eq!(parsed.strings, vec![&b"BRANCH_LEQ"[..], b"", b"LEAF"]);
        // a run cut inside its last value is an error, as a field cut there is
        for cut in [attr.len() - 2, 9, 14] {
            let error = attribute(&attr[..cut]).unwrap_err().0;
            assert!(error.contains("runs past the end") || error.contains("truncated"), "{cut}: {error}");
        }
    }

    #[test]
    fn runs_of_short_and_long_values_read_as_one_field_at_a_time() {
        // the runs' quick paths (one- and two-byte varints, strings under 128 bytes, whole
        // floats) and the field-by-field read of the rest, mixed in each run
        let ints = [0u64, 127, 128, 5, 16_383, 16_384, 300, 1 << 35, 7, u64::MAX, 2];
        let lengths = [0usize, 1, 127, 128, 4, 300, 10];
        let floats = [0.5f32, -0.0, f32::INFINITY, 3.25];
        let mut attr = Vec::new();
        for &v in &ints {
            attr.extend(key(8, 0));
            attr.extend(encode_varint(v));
        }
        let strings: Vec<Vec<u8>> =
            lengths.iter().map(|&n| (0..n).map(|i| b'a' + (i % 26) as u8).collect()).collect();
        for s in &strings {
            attr.extend(length_delimited(9, s));
        }
        for v in floats {
            attr.extend(key(7, 5));
            attr.extend(v.to_le_bytes());
        }
        let parsed = attribute(&attr).unwrap();
        assert_eq!(parsed.ints, ints.iter().map(|&v| v as i64).collect::<Vec<_>>());
        assert_eq!(parsed.strings, strings.iter().map(Vec::as_slice).collect::<Vec<_>>());
        assert_eq!(parsed.floats.iter().map(|f| f.to_bits()).collect::<Vec<_>>(), floats.map(f32::to_bits));
        // cut anywhere: an error, or the values before the cut (a prefix of each list)
        for cut in 0..attr.len() {
            if let Ok(part) = attribute(&attr[..cut]) {
                assert!(parsed.ints.starts_with(&part.ints), "{cut}");
                assert!(parsed.strings.starts_with(&part.strings), "{cut}");
                assert!(parsed.floats.starts_with(&part.floats), "{cut}");
            }
        }
    }

    #[test]
    fn varints_of_one_byte_and_longer_read_alike() {
        // one byte (read inline), the lengths around each 7-bit step, the longest
        let values = [0u64, 1, 127, 128, 255, 300, 16_383, 16_384, 1 << 35, u64::MAX];
        let bytes: Vec<u8> = values.iter().flat_map(|&v| encode_varint(v)).collect();
        let mut reader = fields(&bytes);
        let read: Vec<u64> = values.iter().map(|_| reader.varint().unwrap()).collect();
        assert_eq!((read, reader.at), (values.to_vec(), bytes.len()));
        // cut anywhere inside a long one, or one byte too long: an error, never a value
        let long = encode_varint(u64::MAX);
        for cut in 1..long.len() {
            assert_eq!(fields(&long[..cut]).varint().unwrap_err().0, "truncated varint");
        }
        assert_eq!(fields(&[]).varint().unwrap_err().0, "truncated varint");
        let overlong = [[0x80u8; 10].as_slice(), &[0]].concat();
        assert_eq!(fields(&overlong).varint().unwrap_err().0, "varint longer than 10 bytes");
    }

    #[test]
    fn truncated_input_is_an_error() {
        let node_bytes = length_delimited(4, b"TreeEnsembleClassifier");
        let graph_bytes = length_delimited(1, &node_bytes);
        let model = length_delimited(7, &graph_bytes);
        assert_eq!(parse_model(&model).unwrap().graph.nodes[0].op_type, "TreeEnsembleClassifier");
        let cut = &model[..model.len() - 3];
        assert!(parse_model(cut).unwrap_err().0.contains("runs past the end"));
        assert_eq!(parse_model(&[]).unwrap_err().0, "no graph: not an ONNX model");
    }
}
