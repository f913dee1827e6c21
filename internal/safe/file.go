package safe

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// ErrNotRegular is ReadFile's refusal of a path that is not a regular file: a FIFO, a
// device such as /dev/zero, a socket or a directory.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is ReadFile's refusal of a file larger than its cap.
var ErrTooLarge = errors.New("file too large")

// ReadFile reads the file a configuration value names, bounded, so that a bad value
// costs an error rather than a hang or the process's memory:
//
//  1. it opens the path without blocking (O_NONBLOCK: a FIFO with no writer does not
//     hold the open) and without following it into a terminal (O_NOCTTY);
//  2. it refuses anything but a regular file (ErrNotRegular), by fstat of what it
//     opened, so the check and the read are of the same file;
//  3. it refuses a file larger than max bytes (ErrTooLarge), and reads at most max+1
//     bytes whatever the size claimed, for a file that grows while read.
//
// Errors name neither the path nor the content: the caller says which variable named
// the file. It does not follow the file's changes afterwards.
func ReadFile(path string, max int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, unwrapPath(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, unwrapPath(err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w (%s)", ErrNotRegular, kind(fi.Mode()))
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, fi.Size(), max)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, unwrapPath(err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, max)
	}
	return b, nil
}

// unwrapPath is the reason of a file error without the path.
func unwrapPath(err error) error {
	if pe, ok := errors.AsType[*os.PathError](err); ok {
		return pe.Err
	}
	return err
}

// kind names a file type that is not regular.
func kind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a device"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "an irregular file"
}
