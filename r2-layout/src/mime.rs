//! MIME type → file extension for media keys (seed 003's table; unknown: `bin`).

const TABLE: &[(&str, &str)] = &[
    ("image/jpeg", "jpg"),
    ("image/png", "png"),
    ("image/gif", "gif"),
    ("image/webp", "webp"),
    ("image/svg+xml", "svg"),
    ("audio/ogg", "ogg"),
    ("audio/opus", "opus"),
    ("audio/mpeg", "mp3"),
    ("audio/mp3", "mp3"),
    ("audio/mp4", "m4a"),
    ("audio/m4a", "m4a"),
    ("audio/wav", "wav"),
    ("audio/webm", "webm"),
    ("audio/flac", "flac"),
    ("video/mp4", "mp4"),
    ("video/webm", "webm"),
    ("video/quicktime", "mov"),
    ("application/pdf", "pdf"),
    ("application/msword", "doc"),
    ("application/vnd.openxmlformats-officedocument.wordprocessingml.document", "docx"),
];

/// The extension for a MIME type; parameters (`; charset=...`) and case are ignored.
pub fn extension_for(mime: &str) -> &'static str {
    let essence = mime.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    TABLE.iter().find(|(m, _)| *m == essence).map(|(_, ext)| *ext).unwrap_or("bin")
}

/// Largest media object Hearth stores (seed 003: 25 MB).
pub const MAX_MEDIA_BYTES: u64 = 25 * 1024 * 1024;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_and_fallback() {
        assert_eq!(extension_for("image/jpeg"), "jpg");
        assert_eq!(extension_for("Audio/OGG; codecs=opus"), "ogg");
        assert_eq!(extension_for("video/quicktime"), "mov");
        assert_eq!(extension_for("application/x-unknown"), "bin");
        assert_eq!(extension_for(""), "bin");
    }
}
