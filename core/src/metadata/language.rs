//! A page's language as an ISO 639 code (`en`, `de`, `ja`): the primary subtag of what the
//! page declares (`<html lang="en-GB">`, `og:locale` `pt_BR`), else detected from its text.
//!
//! The detector: no language identification library is at hand for the core (whatlang and
//! lingua are not packaged as Debian `librust-*-dev` crates, the public crate registry is
//! unreachable, and a Python detector would leave the C library without one), so the core
//! has a small one of its own. A script spoken by one language decides alone (kana: `ja`,
//! Hangul: `ko`, Han alone: `zh`, Greek, Hebrew, Thai, Devanagari, Georgian, Armenian); a
//! script shared by many is read word by word against each language's most frequent
//! function words, and the language with most of them wins when it has enough
//! (`MIN_HITS`) and clearly more than the next (`MARGIN`). Its accuracy is measured in
//! `python -m bench.metadata` (the quality row of `make quality`).

/// Characters of text the detector reads (the first ones).
const READ_CHARS: usize = 6000;
/// Function words a language must have among the text's words to be named.
const MIN_HITS: usize = 4;
/// How many times the next language's hits the winner must have.
const MARGIN: f64 = 1.5;

/// The most frequent function words of the languages written in Latin, Cyrillic and Arabic
/// script, which no script tells apart. Words shared by languages count for each; one-letter
/// Latin words are not read (`word_languages`).
const WORDS: &[(&str, &[&str])] = &[
    (
        "en",
        &[
            "the", "and", "of", "to", "is", "in", "that", "for", "with", "was", "are", "this", "it", "on",
            "be", "have", "from", "by", "which", "not",
        ],
    ),
    (
        "de",
        &[
            "der", "die", "und", "das", "ist", "nicht", "ein", "eine", "zu", "mit", "den", "von", "auf",
            "sich", "des", "dem", "auch", "wird", "werden", "ich",
        ],
    ),
    (
        "fr",
        &[
            "le", "la", "les", "et", "des", "est", "une", "du", "que", "pour", "dans", "qui", "pas", "sur",
            "au", "avec", "sont", "ce", "il", "aux",
        ],
    ),
    (
        "es",
        &[
            "el", "la", "los", "las", "y", "que", "del", "en", "por", "con", "una", "para", "es", "se", "lo",
            "como", "más", "pero", "su", "al",
        ],
    ),
    (
        "it",
        &[
            "il", "di", "che", "la", "è", "per", "una", "non", "sono", "della", "con", "del", "gli", "le",
            "nel", "anche", "alla", "più", "dei", "questo",
        ],
    ),
    (
        "pt",
        &[
            "o", "que", "de", "não", "uma", "com", "para", "os", "do", "da", "em", "se", "por", "mais", "as",
            "dos", "como", "foi", "ao", "também",
        ],
    ),
    (
        "nl",
        &[
            "de", "het", "een", "en", "van", "is", "dat", "niet", "op", "te", "zijn", "met", "voor", "ook",
            "maar", "aan", "er", "wordt", "bij", "hij",
        ],
    ),
    (
        "sv",
        &[
            "och", "att", "det", "som", "en", "är", "av", "för", "med", "till", "den", "på", "inte", "har",
            "om", "ett", "var", "jag", "men", "de",
        ],
    ),
    (
        "da",
        &[
            "og", "at", "det", "er", "en", "til", "af", "som", "på", "med", "for", "ikke", "der", "den",
            "har", "de", "et", "var", "jeg", "vi",
        ],
    ),
    (
        "no",
        &[
            "og", "i", "det", "er", "som", "en", "til", "på", "av", "med", "for", "ikke", "har", "de", "et",
            "var", "jeg", "vi", "om", "seg",
        ],
    ),
    (
        "pl",
        &[
            "i", "w", "nie", "na", "się", "z", "jest", "że", "do", "to", "jak", "ale", "po", "o", "co",
            "tak", "od", "przez", "dla", "są",
        ],
    ),
    (
        "cs",
        &[
            "a", "se", "na", "je", "že", "v", "to", "s", "z", "do", "jsou", "pro", "jako", "ale", "by",
            "které", "také", "byl", "jeho", "není",
        ],
    ),
    (
        "ro",
        &[
            "și", "în", "de", "la", "cu", "este", "să", "nu", "care", "pe", "din", "pentru", "mai", "un",
            "o", "sunt", "ca", "fost", "sau", "lui",
        ],
    ),
    (
        "hu",
        &[
            "a", "az", "és", "hogy", "nem", "egy", "is", "van", "meg", "de", "csak", "már", "mint", "el",
            "volt", "ez", "azt", "ki", "kell", "még",
        ],
    ),
    (
        "fi",
        &[
            "ja", "on", "ei", "että", "se", "oli", "hän", "ovat", "mutta", "kun", "myös", "tai", "ole",
            "niin", "sen", "jo", "vain", "kuin", "mukaan", "joka",
        ],
    ),
    (
        "tr",
        &[
            "ve", "bir", "bu", "da", "de", "için", "ile", "olarak", "daha", "çok", "gibi", "olan", "ama",
            "kadar", "en", "her", "sonra", "ne", "değil", "var",
        ],
    ),
    (
        "id",
        &[
            "yang", "dan", "di", "ini", "itu", "dengan", "untuk", "dari", "dalam", "tidak", "akan", "pada",
            "juga", "ke", "ada", "karena", "bahwa", "oleh", "sebagai", "atau",
        ],
    ),
    (
        "vi",
        &[
            "và", "của", "là", "có", "không", "được", "cho", "những", "trong", "với", "người", "này", "các",
            "một", "đã", "để", "khi", "từ", "cũng", "như",
        ],
    ),
    (
        "ca",
        &[
            "el", "la", "els", "les", "i", "de", "que", "del", "amb", "per", "una", "és", "als", "però",
            "més", "seu", "aquest", "són", "com", "va",
        ],
    ),
    (
        "ru",
        &[
            "и", "в", "не", "на", "что", "с", "как", "по", "это", "он", "к", "но", "из", "за", "от", "для",
            "его", "так", "был", "все",
        ],
    ),
    (
        "uk",
        &[
            "і", "в", "не", "на", "що", "з", "як", "до", "це", "та", "у", "за", "від", "для", "його", "але",
            "було", "він", "є", "які",
        ],
    ),
    (
        "bg",
        &[
            "и", "в", "на", "не", "да", "се", "е", "за", "от", "че", "с", "по", "са", "как", "но", "това",
            "ще", "който", "към", "му",
        ],
    ),
    (
        "ar",
        &[
            "في", "من", "على", "أن", "إلى", "التي", "الذي", "عن", "مع", "هذا", "كان", "هذه", "لا", "ما", "أو",
            "بين", "قد", "كل", "بعد", "وقد",
        ],
    ),
    (
        "fa",
        &[
            "و", "در", "به", "از", "که", "این", "را", "با", "است", "برای", "آن", "یک", "خود", "تا", "می",
            "بر", "هم", "نیز", "شده", "شود",
        ],
    ),
    (
        "ur",
        &[
            "کے", "میں", "کی", "ہے", "اور", "کو", "سے", "کا", "نے", "یہ", "پر", "ہیں", "کہ", "بھی", "تھا",
            "گیا", "ایک", "وہ", "لیے", "کر",
        ],
    ),
];

/// A declared language (`en-GB`, `pt_BR`, `EN`) as its primary subtag, lower case; None for
/// what names no language (`x-default`, `und`, `*`, a word).
pub fn primary_subtag(declared: &str) -> Option<String> {
    let primary = declared.trim().split(['-', '_']).next()?.to_ascii_lowercase();
    let valid = (2..=3).contains(&primary.len()) && primary.bytes().all(|b| b.is_ascii_lowercase());
    (valid && primary != "und" && primary != "mul" && primary != "zxx").then_some(primary)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Script {
    Latin,
    Cyrillic,
    Arabic,
    Greek,
    Hebrew,
    Kana,
    Hangul,
    Han,
    Thai,
    Devanagari,
    Georgian,
    Armenian,
}

fn script(c: char) -> Option<Script> {
    Some(match c as u32 {
        0x41..=0x5a | 0x61..=0x7a | 0xc0..=0x24f | 0x1e00..=0x1eff => Script::Latin,
        0x370..=0x3ff | 0x1f00..=0x1fff => Script::Greek,
        0x400..=0x52f => Script::Cyrillic,
        0x531..=0x58f => Script::Armenian,
        0x590..=0x5ff => Script::Hebrew,
        0x600..=0x6ff | 0x750..=0x77f | 0xfb50..=0xfdff | 0xfe70..=0xfeff => Script::Arabic,
        0x900..=0x97f => Script::Devanagari,
        0xe00..=0xe7f => Script::Thai,
        0x10a0..=0x10ff => Script::Georgian,
        0x1100..=0x11ff | 0x3130..=0x318f | 0xac00..=0xd7af => Script::Hangul,
        0x3040..=0x30ff | 0x31f0..=0x31ff | 0xff66..=0xff9f => Script::Kana,
        0x3400..=0x4dbf | 0x4e00..=0x9fff | 0xf900..=0xfaff => Script::Han,
        _ => return None,
    })
}

/// The language of `text`, or None when it is not clear.
pub fn detect(text: &str) -> Option<&'static str> {
    let text: &str = match text.char_indices().nth(READ_CHARS) {
        Some((at, _)) => &text[..at],
        None => text,
    };
    let mut counts = [0usize; 12];
    for c in text.chars() {
        if let Some(s) = script(c) {
            counts[s as usize] += 1;
        }
    }
    let letters: usize = counts.iter().sum();
    if letters < 20 {
        return None;
    }
    let count = |s: Script| counts[s as usize];
    // Japanese writes Han with kana; a tenth of kana is Japanese, never Chinese
    if count(Script::Kana) * 10 >= count(Script::Kana) + count(Script::Han) && count(Script::Kana) >= 10 {
        return Some("ja");
    }
    let (top, top_count) = [
        Script::Latin,
        Script::Cyrillic,
        Script::Arabic,
        Script::Greek,
        Script::Hebrew,
        Script::Hangul,
        Script::Han,
        Script::Thai,
        Script::Devanagari,
        Script::Georgian,
        Script::Armenian,
    ]
    .into_iter()
    .map(|s| (s, count(s)))
    .max_by_key(|&(_, n)| n)?;
    // Latin letters fill CJK pages' menus and codes; a page of CJK characters is in their
    // language even where Latin letters outnumber them a little (a CJK character is a word)
    let cjk = count(Script::Han) + count(Script::Hangul);
    if cjk * 3 >= letters {
        return Some(if count(Script::Hangul) >= count(Script::Han) { "ko" } else { "zh" });
    }
    if top_count * 2 < letters {
        return None;
    }
    match top {
        Script::Greek => Some("el"),
        Script::Hebrew => Some("he"),
        Script::Thai => Some("th"),
        Script::Devanagari => Some("hi"),
        Script::Georgian => Some("ka"),
        Script::Armenian => Some("hy"),
        Script::Hangul => Some("ko"),
        Script::Han => Some("zh"),
        Script::Kana => Some("ja"),
        Script::Latin | Script::Cyrillic | Script::Arabic => by_words(text, top),
    }
}

/// Each function word's languages, as bits of their indices in `WORDS` (built once).
fn word_languages() -> &'static std::collections::HashMap<&'static str, u32> {
    static TABLE: std::sync::OnceLock<std::collections::HashMap<&'static str, u32>> =
        std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let mut table = std::collections::HashMap::new();
        for (index, (language, words)) in WORDS.iter().enumerate() {
            let latin = !matches!(*language, "ru" | "uk" | "bg" | "ar" | "fa" | "ur");
            // a one-letter Latin word is an initial, a unit or a list's marker as often as a
            // word ("a" in English, "s" and "v" of Czech)
            for word in words.iter().filter(|w| !latin || w.chars().count() > 1) {
                *table.entry(*word).or_insert(0) |= 1u32 << index;
            }
        }
        table
    })
}

/// The language whose function words `text` holds most of, among those of `within`.
fn by_words(text: &str, within: Script) -> Option<&'static str> {
    let in_script = |language: &str| match within {
        Script::Cyrillic => matches!(language, "ru" | "uk" | "bg"),
        Script::Arabic => matches!(language, "ar" | "fa" | "ur"),
        _ => !matches!(language, "ru" | "uk" | "bg" | "ar" | "fa" | "ur"),
    };
    let table = word_languages();
    let mut hits = [0usize; WORDS.len()];
    let mut lower = String::new();
    for word in text.split(|c: char| !c.is_alphanumeric()) {
        if word.is_empty() || word.len() > 16 {
            continue;
        }
        lower.clear();
        lower.extend(word.chars().flat_map(char::to_lowercase));
        if let Some(&languages) = table.get(lower.as_str()) {
            for (index, hit) in hits.iter_mut().enumerate() {
                *hit += (languages >> index & 1) as usize;
            }
        }
    }
    let mut ranked: Vec<(usize, &str)> =
        hits.iter().zip(WORDS).filter(|(_, (l, _))| in_script(l)).map(|(&n, (l, _))| (n, *l)).collect();
    ranked.sort_by_key(|&(n, _)| std::cmp::Reverse(n));
    let (best, language) = ranked[0];
    let next = ranked[1].0;
    (best >= MIN_HITS && best as f64 >= next as f64 * MARGIN).then_some(language)
}

#[cfg(test)]
mod tests {
    use super::{detect, primary_subtag};

    #[test]
    fn declared_languages_read_as_their_primary_subtag() {
        assert_eq!(primary_subtag("en-GB").as_deref(), Some("en"));
        assert_eq!(primary_subtag(" pt_BR ").as_deref(), Some("pt"));
        assert_eq!(primary_subtag("DE").as_deref(), Some("de"));
        assert_eq!(primary_subtag("fil").as_deref(), Some("fil"));
        for nothing in ["", "x-default", "und", "english", "*", "e1"] {
            assert_eq!(primary_subtag(nothing), None, "{nothing:?}");
        }
    }

    #[test]
    fn the_detector_names_the_language_of_plain_text() {
        let cases = [
            ("The committee said that the plan was approved by the council and it will be put to a vote in the spring, with the support of most members.", Some("en")),
            ("Die Regierung hat am Montag beschlossen, dass die neuen Regeln nicht vor dem Sommer in Kraft treten werden, sagte ein Sprecher auf Nachfrage.", Some("de")),
            ("Le gouvernement a annoncé que les nouvelles règles ne seront pas appliquées avant l'été, a déclaré un porte-parole dans un communiqué sur la réforme.", Some("fr")),
            ("El gobierno anunció que las nuevas reglas no se aplicarán antes del verano, dijo un portavoz en un comunicado para la prensa y los medios.", Some("es")),
            ("Правительство заявило, что новые правила не вступят в силу до лета, и это было сказано на пресс-конференции для всех журналистов по поводу реформы.", Some("ru")),
            ("政府は月曜日、新しい規則は夏まで施行されないと発表した。広報担当者が記者会見で述べた。", Some("ja")),
            ("政府周一宣布，新规定在夏季之前不会生效。一位发言人在新闻发布会上表示，改革将分阶段进行。", Some("zh")),
            ("정부는 월요일 새로운 규칙이 여름 전에는 시행되지 않을 것이라고 발표했다. 대변인이 기자회견에서 말했다.", Some("ko")),
            ("Η κυβέρνηση ανακοίνωσε ότι οι νέοι κανόνες δεν θα εφαρμοστούν πριν από το καλοκαίρι.", Some("el")),
            // too little to tell
            ("OK", None),
            ("Home About Contact Login Search Menu", None),
        ];
        for (text, expected) in cases {
            assert_eq!(detect(text), expected, "{text:?}");
        }
    }
}
