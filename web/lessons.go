package web

import (
	"cachebook/lessons"
	"cachebook/notebook"
)

// BuiltinLessons returns the lessons embedded in the binary (package
// cachebook/lessons).
func BuiltinLessons() Lessons { return builtinLessons{} }

type builtinLessons struct{}

func (builtinLessons) List() ([]LessonInfo, error) {
	ls, err := lessons.List()
	if err != nil {
		return nil, err
	}
	out := make([]LessonInfo, 0, len(ls))
	for _, l := range ls {
		out = append(out, LessonInfo{ID: l.Name, Title: l.Title, Summary: l.Goal})
	}
	return out, nil
}

// Open returns the lesson with its reference outputs (lessons.Opened) in
// the cells, shown until the reader's own run replaces them.
func (builtinLessons) Open(id string) (*notebook.Notebook, error) { return lessons.Opened(id) }
