//! A bare session on a real server that sends requests exactly as given, with none of the
//! client's checks: to learn what the server itself accepts.

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use zookeeper_jute::{
    encode_request_frame, ConnectRequest, Decode, Encode, ErrorCode, MultiResponse, ReplyHeader,
    Request,
};

pub struct RawSession {
    stream: TcpStream,
    xid: i32,
}

impl RawSession {
    /// A new session on the server at `addr` (`host:port`, no chroot).
    pub async fn connect(addr: &str) -> RawSession {
        let mut stream = TcpStream::connect(addr).await.expect("connect");
        let mut frame = BytesMut::new();
        let request = ConnectRequest::new_session(10_000, false);
        frame.extend_from_slice(&(request.encoded_len() as i32).to_be_bytes());
        request.encode(&mut frame);
        stream.write_all(&frame).await.expect("handshake");
        read_frame(&mut stream).await;
        RawSession { stream, xid: 0 }
    }

    /// Sends `request` and returns the error code of its reply; for a `multi`, the code of the
    /// first operation that failed.
    pub async fn call(&mut self, request: &Request) -> ErrorCode {
        self.xid += 1;
        let mut frame = BytesMut::new();
        encode_request_frame(&mut frame, self.xid, request);
        self.stream.write_all(&frame).await.expect("send");
        loop {
            let mut payload = read_frame(&mut self.stream).await;
            let header = ReplyHeader::decode(&mut payload).expect("reply header");
            if header.xid == self.xid {
                if let (Request::Multi(_), ErrorCode::Ok) = (request, header.err) {
                    let response = MultiResponse::decode(&mut payload).expect("multi response");
                    return response.first_error().map_or(ErrorCode::Ok, |(_, err)| err);
                }
                return header.err;
            }
            // A notification: not what we wait for.
            payload.advance(payload.len());
        }
    }
}

async fn read_frame(stream: &mut TcpStream) -> bytes::Bytes {
    let len = stream
        .read_i32()
        .await
        .expect("frame length (the server closed?)");
    let mut payload = vec![0; len as usize];
    stream
        .read_exact(&mut payload)
        .await
        .expect("frame payload");
    payload.into()
}
