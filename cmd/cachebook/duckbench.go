package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
)

// duckClient drives a duckbench process (built from the separate difftest
// module, which links DuckDB through cgo) over JSON lines on its stdin and
// stdout, so that the main module stays free of cgo.
type duckClient struct {
	cmd     *exec.Cmd
	in      io.WriteCloser
	out     *bufio.Scanner
	version string
	dead    error // set once the process has ended
}

// duckReply is one response line of duckbench.
type duckReply struct {
	OK      bool        `json:"ok"`
	NS      int64       `json:"ns"`
	Rows    int64       `json:"rows"`
	Error   string      `json:"error"`
	DuckDB  string      `json:"duckdb"`
	Threads int         `json:"threads"`
	Result  [][]*string `json:"result"`
}

// startDuck starts the duckbench binary at path with args (its flags:
// -threads, -memory-limit).
func startDuck(ctx context.Context, path string, args ...string) (*duckClient, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, abs, args...)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start duckbench %s: %w", abs, err)
	}
	sc := bufio.NewScanner(outPipe)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	d := &duckClient{cmd: cmd, in: in, out: sc}
	hello, err := d.read()
	if err != nil {
		in.Close()
		cmd.Wait()
		return nil, fmt.Errorf("duckbench did not say hello: %w", err)
	}
	d.version = hello.DuckDB
	return d, nil
}

// read reads one reply line.
func (d *duckClient) read() (duckReply, error) {
	if !d.out.Scan() {
		if err := d.out.Err(); err != nil {
			return duckReply{}, fmt.Errorf("duckbench: %w", err)
		}
		return duckReply{}, d.exited()
	}
	var r duckReply
	if err := json.Unmarshal(d.out.Bytes(), &r); err != nil {
		return duckReply{}, fmt.Errorf("duckbench reply %q: %w", d.out.Text(), err)
	}
	if !r.OK {
		return r, fmt.Errorf("duckbench: %s", r.Error)
	}
	return r, nil
}

func (d *duckClient) call(req map[string]any) (duckReply, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return duckReply{}, err
	}
	if _, err := d.in.Write(append(b, '\n')); err != nil {
		return duckReply{}, d.exited()
	}
	return d.read()
}

// load makes DuckDB read the Parquet file into an in-memory table.
func (d *duckClient) load(parquet, table string, columns []string) error {
	abs, err := filepath.Abs(parquet)
	if err != nil {
		return err
	}
	_, err = d.call(map[string]any{"op": "load", "parquet": abs, "table": table, "columns": columns})
	return err
}

// query runs sql with the given threads and returns DuckDB's wall time and
// the first row of the result.
func (d *duckClient) query(sql string, threads int) (duckReply, error) {
	return d.call(map[string]any{"op": "query", "sql": sql, "threads": threads, "return_rows": 1})
}

// exec runs a statement without a result, such as a SET.
func (d *duckClient) exec(sql string) error {
	_, err := d.call(map[string]any{"op": "exec", "sql": sql})
	return err
}

// exited waits for a duckbench process whose pipes broke and says how it
// ended; a kill by signal is most often the kernel's out-of-memory killer.
func (d *duckClient) exited() error {
	if d.dead != nil {
		return d.dead
	}
	d.in.Close()
	err := d.cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
		d.dead = errors.New("duckbench exited")
	case errors.As(err, &ee) && ee.ProcessState != nil && !ee.Exited():
		d.dead = fmt.Errorf("duckbench was killed (%v); out of memory? see dmesg", ee.ProcessState)
	default:
		d.dead = fmt.Errorf("duckbench exited: %w", err)
	}
	return d.dead
}

func (d *duckClient) close() error {
	if d.dead != nil {
		return nil
	}
	d.call(map[string]any{"op": "quit"})
	d.in.Close()
	err := d.cmd.Wait()
	d.dead = errors.New("duckbench was closed")
	return err
}
