package filesrv

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
)

// Client is one connection to a file server. It is not safe for
// concurrent use: one request at a time.
type Client struct {
	nc  net.Conn
	buf []byte
	hdr [hdrLen]byte
	req [1]byte
}

// clientBuf is the most a Client reads per call.
const clientBuf = 256 << 10

// Dial connects to the file server at addr (host:port).
func Dial(ctx context.Context, addr string) (*Client, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("filesrv: %w", err)
	}
	return &Client{nc: nc, buf: make([]byte, clientBuf)}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.nc.Close() }

// Get asks for the file and hands each piece of the response's body to fn,
// with the piece's offset in the body; b is valid only during the call.
// It returns the body's length as the server announced it. A body that
// ends early (the connection closed or reset; the file shrank on the
// server) is an error wrapping io.ErrUnexpectedEOF or the network error,
// saying how far it got. An error from fn ends the response there: the
// connection is then out of step and must be closed.
func (c *Client) Get(fn func(off int64, b []byte) error) (int64, error) {
	size, err := c.request(reqGet)
	if err != nil {
		return 0, err
	}
	var got int64
	for got < size {
		n, err := c.nc.Read(c.buf[:min(int64(len(c.buf)), size-got)])
		if n > 0 {
			if ferr := fn(got, c.buf[:n]); ferr != nil {
				return size, ferr
			}
			got += int64(n)
		}
		if err != nil && got < size {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return size, fmt.Errorf("filesrv: response cut short at byte %d of %d: %w", got, size, err)
		}
	}
	return size, nil
}

// Stats asks the server for its counters. It makes this connection a
// control connection: its own time and calls are not counted.
func (c *Client) Stats() (Stats, error) {
	n, err := c.request(reqStats)
	if err != nil {
		return Stats{}, err
	}
	if n != statsLen {
		return Stats{}, fmt.Errorf("filesrv: stats response of %d bytes, want %d", n, statsLen)
	}
	if _, err := io.ReadFull(c.nc, c.buf[:n]); err != nil {
		return Stats{}, fmt.Errorf("filesrv: stats: %w", err)
	}
	var st Stats
	if err := st.decode(c.buf[:n]); err != nil {
		return Stats{}, fmt.Errorf("filesrv: %w", err)
	}
	return st, nil
}

// request sends one request byte and reads the response's header.
func (c *Client) request(op byte) (int64, error) {
	c.req[0] = op
	if _, err := c.nc.Write(c.req[:]); err != nil {
		return 0, fmt.Errorf("filesrv: request: %w", err)
	}
	if _, err := io.ReadFull(c.nc, c.hdr[:]); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return 0, fmt.Errorf("filesrv: response header: %w", err)
	}
	n := binary.LittleEndian.Uint64(c.hdr[:])
	if n > maxBody {
		return 0, fmt.Errorf("filesrv: response header announces %d bytes: garbled", n)
	}
	return int64(n), nil
}
