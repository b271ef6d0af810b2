//! A page's dates as ISO 8601: what markup writes (`2024-03-05T10:30:00+01:00`,
//! `2024/03/05`, `Tue, 05 Mar 2024 10:30:00 GMT`, `March 5, 2024`, `5 March 2024`,
//! `20240305`) read into `YYYY-MM-DD`, with `THH:MM:SS` and the offset (`Z` or `±HH:MM`) when
//! the value has a time. A value that is no date (a day past its month's end, a year outside
//! `YEARS`, text) is None, and the next source is read.

/// The years a page's date may have: older or later values are typos and placeholders
/// (`0001-01-01`, `2099-…`).
const YEARS: std::ops::RangeInclusive<u32> = 1900..=2100;

const MONTHS: [&str; 12] =
    ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];

/// `value` as ISO 8601, or None.
pub fn normalize(value: &str) -> Option<String> {
    let value = value.trim();
    if value.is_empty() || value.len() > 64 {
        return None;
    }
    numeric(value).or_else(|| written(value))
}

/// The date a URL's path holds as `/YYYY/MM/DD/` or `/YYYY-MM-DD` (`-` or `/` between,
/// starting a segment), e.g. `https://site.example/2024/03/05/story`.
pub fn in_path(url: &str) -> Option<String> {
    let path = url.split_once("://").map_or(url, |(_, rest)| rest.find('/').map_or("", |at| &rest[at..]));
    let path = &path[..path.find(['?', '#']).unwrap_or(path.len())];
    let b = path.as_bytes();
    path.match_indices('/').find_map(|(at, _)| {
        let mut i = at + 1;
        let year = digits(b, &mut i, 4)?;
        let sep = *b.get(i).filter(|&&c| c == b'/' || c == b'-')?;
        i += 1;
        let month = digits(b, &mut i, 2)?;
        (b.get(i) == Some(&sep)).then_some(())?;
        i += 1;
        let day = digits(b, &mut i, 2)?;
        if b.get(i).is_some_and(u8::is_ascii_digit) {
            return None;
        }
        date(year, month, day)
    })
}

/// The first date a short text holds ("Published Jun 4, 2025 · 3 min read"), as ISO 8601.
pub fn in_text(text: &str) -> Option<String> {
    let words: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || c == '|' || c == '·')
        .map(|w| w.trim_matches(|c: char| c == ',' || c == ':' || c == ';'))
        .filter(|w| !w.is_empty())
        .collect();
    (0..words.len()).find_map(|i| {
        let word = words[i].trim_end_matches('.');
        numeric(word).or_else(|| written(&words[i..(i + 6).min(words.len())].join(" ")))
    })
}

fn days_in(year: u32, month: u32) -> u32 {
    match month {
        2 if (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

fn date(year: u32, month: u32, day: u32) -> Option<String> {
    (YEARS.contains(&year) && (1..=12).contains(&month) && day >= 1 && day <= days_in(year, month))
        .then(|| format!("{year:04}-{month:02}-{day:02}"))
}

/// Reads `count` ASCII digits at `*at`.
fn digits(bytes: &[u8], at: &mut usize, count: usize) -> Option<u32> {
    let run = bytes.get(*at..*at + count)?;
    if !run.iter().all(u8::is_ascii_digit) {
        return None;
    }
    *at += count;
    Some(run.iter().fold(0, |n, &b| n * 10 + u32::from(b - b'0')))
}

/// `YYYY-MM-DD`, `YYYY/MM/DD`, `YYYY.MM.DD` or `YYYYMMDD`, then optionally a time (after `T`
/// or a space) and an offset.
fn numeric(value: &str) -> Option<String> {
    let b = value.as_bytes();
    let mut at = 0;
    let year = digits(b, &mut at, 4)?;
    let (month, day) = match b.get(at) {
        Some(&sep @ (b'-' | b'/' | b'.')) => {
            at += 1;
            let month = digits(b, &mut at, 2).or_else(|| digits(b, &mut at, 1))?;
            if b.get(at) != Some(&sep) {
                // a year and a month only: no day to give
                return None;
            }
            at += 1;
            let day = digits(b, &mut at, 2).or_else(|| digits(b, &mut at, 1))?;
            (month, day)
        }
        Some(b'0'..=b'9') => (digits(b, &mut at, 2)?, digits(b, &mut at, 2)?),
        _ => return None,
    };
    let day_text = date(year, month, day)?;
    let rest = &value[at..];
    if rest.is_empty() {
        return Some(day_text);
    }
    let rest = rest.strip_prefix('T').or_else(|| rest.strip_prefix(' '))?;
    match time(rest.trim_start()) {
        Some(time) => Some(format!("{day_text}T{time}")),
        // a date followed by what is not a time ("2024-03-05 (updated)") keeps its date only
        None => Some(day_text),
    }
}

/// `HH:MM[:SS[.fff]]` then `Z`, `±HH:MM`, `±HHMM`, ` GMT`/` UTC` or nothing, as
/// `HH:MM:SS[offset]`.
fn time(value: &str) -> Option<String> {
    let b = value.as_bytes();
    let mut at = 0;
    let hour = digits(b, &mut at, 2)?;
    if b.get(at) != Some(&b':') {
        return None;
    }
    at += 1;
    let minute = digits(b, &mut at, 2)?;
    let mut second = 0;
    if b.get(at) == Some(&b':') {
        at += 1;
        second = digits(b, &mut at, 2)?;
        if b.get(at) == Some(&b'.') || b.get(at) == Some(&b',') {
            at += 1;
            while b.get(at).is_some_and(u8::is_ascii_digit) {
                at += 1;
            }
        }
    }
    if hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let offset = offset(value[at..].trim_start())?;
    Some(format!("{hour:02}:{minute:02}:{second:02}{offset}"))
}

/// A time's offset: `Z`, `±HH:MM`, `±HHMM`, `±HH`, `GMT`/`UTC` (as `Z`) or nothing.
fn offset(value: &str) -> Option<String> {
    let upper = value.trim().to_ascii_uppercase();
    if upper.is_empty() {
        return Some(String::new());
    }
    if upper == "Z" || upper == "GMT" || upper == "UTC" {
        return Some("Z".into());
    }
    let b = upper.as_bytes();
    let sign = match b[0] {
        b'+' | b'-' => b[0] as char,
        _ => return None,
    };
    let mut at = 1;
    let hours = digits(b, &mut at, 2)?;
    if b.get(at) == Some(&b':') {
        at += 1;
    }
    let minutes = if at == b.len() { 0 } else { digits(b, &mut at, 2)? };
    if at != b.len() || hours > 14 || minutes > 59 {
        return None;
    }
    Some(format!("{sign}{hours:02}:{minutes:02}"))
}

fn month_of(word: &str) -> Option<u32> {
    let word = word.trim_end_matches('.').to_ascii_lowercase();
    if word.len() < 3 {
        return None;
    }
    let index = MONTHS.iter().position(|m| word.starts_with(m))?;
    // "march", "mar", "sept" and "september": a prefix of the month's English name
    const NAMES: [&str; 12] = [
        "january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
        "november", "december",
    ];
    (NAMES[index].starts_with(&word) || word == "sept").then_some(index as u32 + 1)
}

/// English written dates: `March 5, 2024`, `5 March 2024`, `Tue, 05 Mar 2024 10:30:00 GMT`
/// (RFC 2822, the time and offset kept), `Mar 5 2024`.
fn written(value: &str) -> Option<String> {
    let words: Vec<&str> =
        value.split(|c: char| c.is_whitespace() || c == ',').filter(|w| !w.is_empty()).collect();
    let mut words = words.as_slice();
    // a weekday first
    if words
        .first()
        .is_some_and(|w| w.len() >= 3 && w.chars().all(char::is_alphabetic) && month_of(w).is_none())
    {
        words = &words[1..];
    }
    let number = |w: &str| -> Option<u32> {
        let w = w.trim_end_matches(|c: char| c.is_ascii_alphabetic()); // 5th, 1st
        (!w.is_empty() && w.len() <= 4 && w.bytes().all(|b| b.is_ascii_digit())).then(|| w.parse().ok())?
    };
    let (day, month, year) = match words {
        [a, b, c, ..] if month_of(a).is_some() => (number(b)?, month_of(a)?, number(c)?),
        [a, b, c, ..] if month_of(b).is_some() => (number(a)?, month_of(b)?, number(c)?),
        _ => return None,
    };
    if year < 1000 {
        return None;
    }
    let day_text = date(year, month, day)?;
    match words.get(3).and_then(|t| time(&words[3..].join(" ")).filter(|_| t.contains(':'))) {
        Some(time) => Some(format!("{day_text}T{time}")),
        None => Some(day_text),
    }
}

#[cfg(test)]
mod tests {
    use super::normalize;

    #[test]
    fn dates_in_a_line_of_text() {
        use super::in_text;
        assert_eq!(in_text("Published Jun 4, 2025").as_deref(), Some("2025-06-04"));
        assert_eq!(in_text("Feb 11, 2019 · 3 min read").as_deref(), Some("2019-02-11"));
        assert_eq!(in_text("Updated: Dec 17, 2025, 21:47 IST").as_deref(), Some("2025-12-17"));
        assert_eq!(in_text("Posted on 2024-03-05 by Ann").as_deref(), Some("2024-03-05"));
        assert_eq!(in_text("3 min read"), None);
        assert_eq!(in_text("May the best win, 2024"), None);
    }

    #[test]
    fn dates_in_a_urls_path() {
        use super::in_path;
        assert_eq!(in_path("https://a.example/news/2024/03/05/story").as_deref(), Some("2024-03-05"));
        assert_eq!(
            in_path("https://a.example/2015-06-08-title?x=/2024/01/01").as_deref(),
            Some("2015-06-08")
        );
        assert_eq!(in_path("https://a.example/x?d=/2024/01/01"), None);
        assert_eq!(in_path("https://a.example/2019-10-flint-tool.html"), None);
        assert_eq!(in_path("https://a.example/id/20240305123"), None);
        assert_eq!(in_path("https://a.example/2024/13/05/x"), None);
        assert_eq!(in_path("/2024/03/05/").as_deref(), Some("2024-03-05"));
    }

    #[test]
    fn dates_as_pages_write_them_read_as_iso_8601() {
        let cases = [
            ("2024-03-05", Some("2024-03-05")),
            ("2024-03-05T10:30:00Z", Some("2024-03-05T10:30:00Z")),
            ("2024-03-05T10:30:00.123+01:00", Some("2024-03-05T10:30:00+01:00")),
            ("2024-03-05T10:30+0530", Some("2024-03-05T10:30:00+05:30")),
            ("2024-03-05 10:30:00", Some("2024-03-05T10:30:00")),
            ("2024/3/5", Some("2024-03-05")),
            ("20240305", Some("2024-03-05")),
            ("  2024-03-05T10:30:00-05:00 ", Some("2024-03-05T10:30:00-05:00")),
            ("Tue, 05 Mar 2024 10:30:00 GMT", Some("2024-03-05T10:30:00Z")),
            ("March 5, 2024", Some("2024-03-05")),
            ("5th March 2024", Some("2024-03-05")),
            ("Sept. 12, 2023", Some("2023-09-12")),
            ("2024-02-29", Some("2024-02-29")),
            // not dates: never a page's failure, only no value
            ("2023-02-29", None),
            ("2024-13-01", None),
            ("0001-01-01T00:00:00Z", None),
            ("2024-03", None),
            ("yesterday", None),
            ("", None),
            ("2024-03-05T25:00:00", Some("2024-03-05")),
            ("Mayday 5 2024", None),
        ];
        for (value, expected) in cases {
            assert_eq!(normalize(value).as_deref(), expected, "{value:?}");
        }
    }
}
