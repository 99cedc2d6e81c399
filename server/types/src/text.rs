//! Client text in messages and logs: a client's string can reach an error message (serde quotes
//! an unknown enum name whole, a request names a circuit), so it is cut to a short prefix first.

use std::borrow::Cow;

/// `text`, or its first `max_chars` characters followed by `…` and how many more there were.
pub fn clip(text: &str, max_chars: usize) -> Cow<'_, str> {
    match text.char_indices().nth(max_chars) {
        None => Cow::Borrowed(text),
        Some((end, _)) => {
            let more = text[end..].chars().count();
            Cow::Owned(format!("{}… ({more} more characters)", &text[..end]))
        }
    }
}

/// The most characters of a `request_id` a log line carries beside the job id, so that snarkd's
/// lines join with Curio's (whose ids are far shorter: `porep-<miner>-<sector>`).
pub const LOGGED_REQUEST_ID_CHARS: usize = 128;

/// A `request_id` as log lines carry it.
pub fn logged_request_id(id: &str) -> Cow<'_, str> {
    clip(id, LOGGED_REQUEST_ID_CHARS)
}

#[cfg(test)]
mod tests {
    use super::clip;

    #[test]
    fn long_text_is_cut_on_a_character_boundary_saying_how_much_is_left() {
        assert_eq!(clip("short", 5), "short");
        assert_eq!(clip("ééééé", 2), "éé… (3 more characters)");
        let long = "x".repeat(262_144);
        assert!(clip(&long, 200).len() < 240);
    }
}
