package jupyter

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
)

// ConnectionInfo is the content of a Jupyter connection file: where the
// kernel listens and the key that signs messages.
type ConnectionInfo struct {
	Transport       string `json:"transport"` // tcp or ipc
	IP              string `json:"ip"`
	ShellPort       int    `json:"shell_port"`
	ControlPort     int    `json:"control_port"`
	IOPubPort       int    `json:"iopub_port"`
	StdinPort       int    `json:"stdin_port"`
	HBPort          int    `json:"hb_port"`
	Key             string `json:"key"`
	SignatureScheme string `json:"signature_scheme"`
	KernelName      string `json:"kernel_name,omitempty"`
}

// maxConnectionFile bounds the size of a connection file.
const maxConnectionFile = 64 << 10

// ReadConnectionFile reads and checks a connection file.
func ReadConnectionFile(path string) (*ConnectionInfo, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("jupyter: connection file: %w", err)
	}
	if st.Size() > maxConnectionFile {
		return nil, fmt.Errorf("jupyter: connection file %s: %d bytes is larger than %d", path, st.Size(), maxConnectionFile)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("jupyter: connection file: %w", err)
	}
	return ParseConnection(b)
}

// ParseConnection decodes and checks the JSON of a connection file.
func ParseConnection(b []byte) (*ConnectionInfo, error) {
	var c ConnectionInfo
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("jupyter: connection file: %w", err)
	}
	if c.Transport == "" {
		c.Transport = "tcp"
	}
	if c.SignatureScheme == "" {
		c.SignatureScheme = "hmac-sha256"
	}
	switch {
	case c.Transport != "tcp" && c.Transport != "ipc":
		return nil, fmt.Errorf("jupyter: connection file: transport %q is not supported (want tcp or ipc)", c.Transport)
	case c.SignatureScheme != "hmac-sha256":
		return nil, fmt.Errorf("jupyter: connection file: signature scheme %q is not supported (want hmac-sha256)", c.SignatureScheme)
	case c.IP == "":
		return nil, errors.New("jupyter: connection file: ip is missing")
	}
	if c.Transport == "tcp" {
		for _, p := range []struct {
			name string
			port int
		}{{"shell_port", c.ShellPort}, {"control_port", c.ControlPort}, {"iopub_port", c.IOPubPort}, {"stdin_port", c.StdinPort}, {"hb_port", c.HBPort}} {
			if p.port <= 0 || p.port > 65535 {
				return nil, fmt.Errorf("jupyter: connection file: %s %d is not a port", p.name, p.port)
			}
		}
	}
	return &c, nil
}

// endpoint returns the ZeroMQ endpoint of port: tcp://ip:port, or for ipc
// the file ip-port (Jupyter's convention).
func (c *ConnectionInfo) endpoint(port int) string {
	if c.Transport == "ipc" {
		return "ipc://" + c.IP + "-" + strconv.Itoa(port)
	}
	return "tcp://" + net.JoinHostPort(c.IP, strconv.Itoa(port))
}

// listenEndpoint is endpoint through the checked transports the kernel
// listens on (see DefaultMaxMessageBytes): tcp and ipc are their names.
func (c *ConnectionInfo) listenEndpoint(tcp, ipc string, port int) string {
	if c.Transport == "ipc" {
		return ipc + "://" + c.IP + "-" + strconv.Itoa(port)
	}
	return tcp + "://" + net.JoinHostPort(c.IP, strconv.Itoa(port))
}
