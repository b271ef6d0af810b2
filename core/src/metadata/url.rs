//! A reference resolved against a base URL (RFC 3986 section 5.2, for the http(s) URLs a
//! canonical link names): enough for `<link rel=canonical href="/a/b">` against the page's
//! `<base href>` or its own URL. Only an absolute http(s) result is a URL to give.

/// `(scheme, authority, path, query-and-fragment)` of an absolute http(s) URL.
fn split(url: &str) -> Option<(&str, &str, &str, &str)> {
    let colon = url.find(':')?;
    let scheme = &url[..colon];
    if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
        return None;
    }
    let rest = url[colon + 1..].strip_prefix("//")?;
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    if authority.is_empty() {
        return None;
    }
    let path_end = tail.find(['?', '#']).unwrap_or(tail.len());
    Some((scheme, authority, &tail[..path_end], &tail[path_end..]))
}

/// RFC 3986's remove_dot_segments.
fn remove_dots(path: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    let segments: Vec<&str> = path.split('/').collect();
    for (index, segment) in segments.iter().enumerate() {
        let last = index + 1 == segments.len();
        match *segment {
            "." => {
                if last {
                    out.push("");
                }
            }
            ".." => {
                if out.len() > 1 {
                    out.pop();
                }
                if last {
                    out.push("");
                }
            }
            s => out.push(s),
        }
    }
    let joined = out.join("/");
    if joined.starts_with('/') {
        joined
    } else {
        format!("/{joined}")
    }
}

/// `reference` (trimmed, as a browser trims an `href`) resolved against `base`, when the result
/// is an absolute http(s) URL; a reference that already is one needs no base.
pub fn resolve(reference: &str, base: Option<&str>) -> Option<String> {
    let reference = reference.trim();
    if reference.is_empty() || reference.contains(char::is_whitespace) {
        return None;
    }
    if let Some((scheme, authority, path, rest)) = split(reference) {
        let path = if path.is_empty() { "/".to_string() } else { remove_dots(path) };
        return Some(format!("{}://{authority}{path}{rest}", scheme.to_ascii_lowercase()));
    }
    if reference.contains(':') && !reference.starts_with(['/', '?', '#', '.']) {
        let scheme = &reference[..reference.find(':').unwrap_or(0)];
        if scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) {
            return None; // another scheme (mailto:, javascript:)
        }
    }
    let (scheme, authority, base_path, _) = split(base?)?;
    let scheme = scheme.to_ascii_lowercase();
    if let Some(net) = reference.strip_prefix("//") {
        return resolve(&format!("{scheme}://{net}"), None);
    }
    let split_at = reference.find(['?', '#']).unwrap_or(reference.len());
    let (ref_path, ref_rest) = reference.split_at(split_at);
    let path = if ref_path.is_empty() {
        if base_path.is_empty() {
            "/".to_string()
        } else {
            base_path.to_string()
        }
    } else if ref_path.starts_with('/') {
        remove_dots(ref_path)
    } else {
        let dir = &base_path[..base_path.rfind('/').map_or(0, |i| i + 1)];
        let dir = if dir.is_empty() { "/" } else { dir };
        remove_dots(&format!("{dir}{ref_path}"))
    };
    Some(format!("{scheme}://{authority}{path}{ref_rest}"))
}

#[cfg(test)]
mod tests {
    use super::resolve;

    #[test]
    fn references_resolve_as_rfc_3986_says() {
        let base = Some("https://news.example/world/2024/story.html?x=1");
        let cases = [
            ("https://Other.example/a", None, Some("https://Other.example/a")),
            ("HTTP://example.org", None, Some("http://example.org/")),
            ("/a/b", base, Some("https://news.example/a/b")),
            ("c", base, Some("https://news.example/world/2024/c")),
            ("../c?q", base, Some("https://news.example/world/c?q")),
            ("//cdn.example/x", base, Some("https://cdn.example/x")),
            ("?page=2", base, Some("https://news.example/world/2024/story.html?page=2")),
            ("/a/./b/../c", base, Some("https://news.example/a/c")),
            ("/a/b", None, None),
            ("mailto:x@example.org", base, None),
            ("javascript:void(0)", base, None),
            ("/a b", base, None),
            ("", base, None),
            ("/a", Some("ftp://example.org/"), None),
        ];
        for (reference, base, expected) in cases {
            assert_eq!(resolve(reference, base).as_deref(), expected, "{reference:?} on {base:?}");
        }
    }
}
