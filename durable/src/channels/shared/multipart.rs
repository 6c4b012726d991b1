//! `multipart/form-data` bodies, for the platforms that take files that way
//! (Telegram's `sendVoice`, Discord's attachments).

/// A `multipart/form-data` body: text fields, then one file. Returns the
/// content type (with its boundary) and the bytes.
pub fn multipart(fields: &[(&str, &str)], file: (&str, &str, &str, &[u8])) -> (String, Vec<u8>) {
    let boundary = "hearth-form-boundary-7d3a9c";
    let mut body = Vec::with_capacity(file.3.len() + 512);
    for (name, value) in fields {
        body.extend_from_slice(
            format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n").as_bytes(),
        );
    }
    let (name, filename, mime, bytes) = file;
    body.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"{filename}\"\r\n\
             Content-Type: {mime}\r\n\r\n"
        )
        .as_bytes(),
    );
    body.extend_from_slice(bytes);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multipart_bodies_carry_fields_and_the_file() {
        let (ct, body) = multipart(&[("chat_id", "42")], ("voice", "reply.ogg", "audio/ogg", b"OggS"));
        let text = String::from_utf8_lossy(&body);
        let boundary = ct.split("boundary=").nth(1).unwrap();
        assert!(text.starts_with(&format!("--{boundary}\r\n")));
        assert!(text.contains("name=\"chat_id\"\r\n\r\n42\r\n"));
        assert!(text.contains("filename=\"reply.ogg\"\r\nContent-Type: audio/ogg\r\n\r\nOggS\r\n"));
        assert!(text.ends_with(&format!("--{boundary}--\r\n")));
    }
}
