// Command protoschema writes vk_sandbox/api/protobuf_schema.json: the protobuf field table of
// the Kubernetes API types the sandbox's emulator serves, read by reflection from the k8s.io/api
// Go types themselves (their `protobuf` and `json` struct tags), so that the emulator decodes a
// protobuf request body into the same JSON a Go client's json.Marshal of the object would give:
// field names, `,inline` embedding, and which zero values `omitempty` leaves out (a pointer's zero
// is kept, as the Go client encodes it). Run by `make protobuf-schema`; the output is committed.
// With `-vectors DIR`, it writes test objects in both encodings instead (vectors.go).
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	nodev1 "k8s.io/api/node/v1"
	policyv1 "k8s.io/api/policy/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The group versions whose kinds a client may send the emulator (vk_sandbox/api/resources.py and
// the subresources' kinds: Binding, Eviction, TokenRequest). Each registers meta/v1's option
// kinds (DeleteOptions...) too.
var groups = []func(*runtime.Scheme) error{
	corev1.AddToScheme,
	coordinationv1.AddToScheme,
	nodev1.AddToScheme,
	authenticationv1.AddToScheme,
	authorizationv1.AddToScheme,
	certificatesv1.AddToScheme,
	certificatesv1beta1.AddToScheme,
	eventsv1.AddToScheme,
	policyv1.AddToScheme,
	resourcev1.AddToScheme,
}

// Types with their own protobuf and JSON forms (hand-written Marshal/MarshalJSON upstream).
var special = map[reflect.Type]string{
	reflect.TypeOf(resource.Quantity{}):    "quantity",
	reflect.TypeOf(intstr.IntOrString{}):   "intorstring",
	reflect.TypeOf(metav1.Time{}):          "time",
	reflect.TypeOf(metav1.MicroTime{}):     "microtime",
	reflect.TypeOf(metav1.Duration{}):      "duration",
	reflect.TypeOf(runtime.RawExtension{}): "raw",
	reflect.TypeOf(metav1.FieldsV1{}):      "fieldsv1",
}

// field is one row: [number, json name, type, flags]; flags: r repeated, m map (type is the
// value's), o omitempty, p pointer, i inline (the message's fields join its parent's).
type field [4]any

type schema struct {
	Kinds    map[string]string  `json:"kinds"`
	Messages map[string][]field `json:"messages"`
}

func messageName(t reflect.Type) string {
	return strings.TrimPrefix(t.PkgPath(), "k8s.io/") + "." + t.Name()
}

func scalar(t reflect.Type) (string, bool) {
	if name, ok := special[t]; ok {
		return name, true
	}
	switch t.Kind() {
	case reflect.String:
		return "string", true
	case reflect.Bool:
		return "bool", true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "int", true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "uint", true
	case reflect.Float32, reflect.Float64:
		return "double", true
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "bytes", true
		}
		if t.Elem().Kind() == reflect.String {
			return "strings", true // a named []string in a map: a message of `repeated string items = 1`
		}
	}
	return "", false
}

func (s *schema) typeOf(t reflect.Type) string {
	if name, ok := scalar(t); ok {
		return name
	}
	if t.Kind() != reflect.Struct {
		panic(fmt.Sprintf("no protobuf form for %v", t))
	}
	s.add(t)
	return messageName(t)
}

func (s *schema) add(t reflect.Type) {
	name := messageName(t)
	if _, done := s.Messages[name]; done {
		return
	}
	s.Messages[name] = nil // taken: a type that holds itself
	var rows []field
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("protobuf")
		if tag == "" {
			continue // TypeMeta and other JSON-only fields
		}
		parts := strings.Split(tag, ",")
		number, err := strconv.Atoi(parts[1])
		if err != nil {
			panic(fmt.Sprintf("%s.%s: protobuf tag %q", name, f.Name, tag))
		}
		jsonTag := strings.Split(f.Tag.Get("json"), ",")
		flags := ""
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			flags += "p"
			ft = ft.Elem()
		}
		var typ string
		switch {
		case ft.Kind() == reflect.Map:
			if ft.Key().Kind() != reflect.String {
				panic(fmt.Sprintf("%s.%s: map key %v", name, f.Name, ft.Key()))
			}
			flags += "m"
			typ = s.typeOf(ft.Elem())
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() != reflect.Uint8:
			flags += "r"
			elem := ft.Elem()
			if elem.Kind() == reflect.Pointer {
				elem = elem.Elem()
			}
			typ = s.typeOf(elem)
		default:
			typ = s.typeOf(ft)
		}
		for _, option := range jsonTag[1:] {
			if option == "omitempty" {
				flags += "o"
			}
		}
		jsonName := jsonTag[0]
		switch {
		case jsonName == "" && f.Anonymous:
			flags += "i" // encoding/json inlines an embedded struct without a name
		case jsonName == "":
			jsonName = f.Name
		case jsonName == "-":
			jsonName = "" // in JSON by a hand-written MarshalJSON (FieldsV1.Raw)
		}
		rows = append(rows, field{number, jsonName, typ, flags})
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i][0].(int) < rows[j][0].(int) })
	s.Messages[name] = rows
}

// encode writes one kind and one message a line, sorted, so that a regeneration's diff reads.
func (s *schema) encode() []byte {
	var b strings.Builder
	section := func(title string, keys []string, value func(string) any) {
		sort.Strings(keys)
		b.WriteString(" " + strconv.Quote(title) + ": {\n")
		for i, key := range keys {
			encoded, err := json.Marshal(value(key))
			if err != nil {
				panic(err)
			}
			b.WriteString("  " + strconv.Quote(key) + ": " + string(encoded))
			if i < len(keys)-1 {
				b.WriteString(",")
			}
			b.WriteString("\n")
		}
		b.WriteString(" }")
	}
	b.WriteString("{\n")
	kinds := make([]string, 0, len(s.Kinds))
	for key := range s.Kinds {
		kinds = append(kinds, key)
	}
	section("kinds", kinds, func(key string) any { return s.Kinds[key] })
	b.WriteString(",\n")
	messages := make([]string, 0, len(s.Messages))
	for key := range s.Messages {
		messages = append(messages, key)
	}
	section("messages", messages, func(key string) any { return s.Messages[key] })
	b.WriteString("\n}\n")
	return []byte(b.String())
}

func main() {
	scheme := runtime.NewScheme()
	for _, add := range groups {
		if err := add(scheme); err != nil {
			panic(err)
		}
	}
	out := schema{Kinds: map[string]string{}, Messages: map[string][]field{}}
	for gvk, t := range scheme.AllKnownTypes() {
		if t.Kind() != reflect.Struct || strings.HasPrefix(t.PkgPath(), "k8s.io/apimachinery/pkg/runtime") {
			continue
		}
		if _, ok := reflect.New(t).Interface().(interface{ Marshal() ([]byte, error) }); !ok {
			continue // WatchEvent and others without a protobuf form
		}
		out.Kinds[gvk.GroupVersion().String()+"/"+gvk.Kind] = out.typeOf(t)
	}
	if len(os.Args) == 3 && os.Args[1] == "-vectors" {
		vectors(scheme, os.Args[2])
		return
	}
	if err := os.WriteFile(os.Args[1], out.encode(), 0o644); err != nil {
		panic(err)
	}
	fmt.Fprintf(os.Stderr, "protoschema: %d kinds, %d messages -> %s\n", len(out.Kinds), len(out.Messages), os.Args[1])
}
