/* kconform.codecs._speedups: an optional native decoder for the generated message classes and for
 * the records of a v2 record batch, and a native encoder for those records.
 *
 * It knows nothing of Kafka's messages: codecs/_native.py compiles each (class, version) from the
 * generated schema into a small program of field operations, and this module walks it. Objects are
 * built as the generated decoders build them (same slot classes, same field values), by allocating
 * the class and storing into its __slots__ offsets. Every read is bounds-checked; on anything
 * unexpected the decoder gives up (returns None) and the pure-Python path decodes the input again,
 * raising its exact DecodeError if the input is bad. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <string.h>

enum Kind {
    K_BOOL = 1, K_INT8, K_INT16, K_UINT16, K_INT32, K_UINT32, K_INT64, K_FLOAT64,
    K_UUID, K_STRING, K_BYTES, K_RECORDS, K_STRUCT
};
enum Default { D_CONST = 0, D_LIST = 1, D_CALL = 2 };

typedef struct Prog Prog;

typedef struct {
    int kind;
    int is_array;
    int nullable;       /* the value (or array) may be null at this version */
    int compact;        /* compact lengths (flexible version) */
    int tag;            /* for tagged fields */
    Py_ssize_t offset;  /* slot offset in the object */
    Prog *sub;          /* struct programs */
} FieldOp;

typedef struct {
    Py_ssize_t offset;
    int how;
    PyObject *value;    /* the constant, or the callable for D_CALL */
} DefaultOp;

struct Prog {
    PyTypeObject *cls;
    int flexible;
    Py_ssize_t nfields, ntagged, ndefaults;
    FieldOp *fields, *tagged;
    DefaultOp *defaults;
    Py_ssize_t unknown_offset;  /* -1 when the class has no unknown_tagged_fields */
    PyObject *keep;             /* the Python objects this program refers to */
};

typedef struct {
    const unsigned char *b;
    Py_ssize_t pos, len;
    PyObject *bufobj;
} Reader;

static PyObject *UUID_TYPE = NULL, *ZERO_UUID = NULL, *SAFE_UNKNOWN = NULL;
static Py_ssize_t UUID_INT_OFFSET = -1, UUID_SAFE_OFFSET = -1;

/* ---- program building ------------------------------------------------------------------------- */

static void prog_free(Prog *p) {
    if (p == NULL) return;
    for (Py_ssize_t i = 0; i < p->nfields; i++) prog_free(p->fields[i].sub);
    for (Py_ssize_t i = 0; i < p->ntagged; i++) prog_free(p->tagged[i].sub);
    PyMem_Free(p->fields);
    PyMem_Free(p->tagged);
    PyMem_Free(p->defaults);
    Py_XDECREF(p->keep);
    PyMem_Free(p);
}

static Py_ssize_t slot_offset(PyObject *descr) {
    if (!PyObject_TypeCheck(descr, &PyMemberDescr_Type)) {
        PyErr_SetString(PyExc_TypeError, "expected a __slots__ member descriptor");
        return -1;
    }
    PyMemberDef *def = ((PyMemberDescrObject *)descr)->d_member;
    if (def->type != T_OBJECT_EX) {
        PyErr_SetString(PyExc_TypeError, "expected an object slot");
        return -1;
    }
    return def->offset;
}

static Prog *prog_build(PyObject *spec);

/* op tuple: (kind, is_array, nullable, compact, tag, descriptor, sub_spec_or_None) */
static int op_build(PyObject *t, FieldOp *op) {
    PyObject *descr, *sub;
    if (!PyArg_ParseTuple(t, "iiiiiOO", &op->kind, &op->is_array, &op->nullable, &op->compact, &op->tag,
                          &descr, &sub))
        return -1;
    op->offset = slot_offset(descr);
    if (op->offset < 0) return -1;
    op->sub = NULL;
    if (sub != Py_None) {
        op->sub = prog_build(sub);
        if (op->sub == NULL) return -1;
    }
    return 0;
}

/* spec: (cls, flexible, (ops...), (tagged ops...), ((descriptor, how, value)...), unknown_descriptor_or_None) */
static Prog *prog_build(PyObject *spec) {
    PyObject *cls, *ops, *tagged, *defaults, *unknown;
    int flexible;
    if (!PyArg_ParseTuple(spec, "OiO!O!O!O", &cls, &flexible, &PyTuple_Type, &ops, &PyTuple_Type, &tagged,
                          &PyTuple_Type, &defaults, &unknown))
        return NULL;
    if (!PyType_Check(cls)) {
        PyErr_SetString(PyExc_TypeError, "expected a class");
        return NULL;
    }
    Prog *p = PyMem_Calloc(1, sizeof(Prog));
    if (p == NULL) return (Prog *)PyErr_NoMemory();
    Py_INCREF(spec);
    p->keep = spec;
    p->cls = (PyTypeObject *)cls;
    p->flexible = flexible;
    p->nfields = PyTuple_GET_SIZE(ops);
    p->ntagged = PyTuple_GET_SIZE(tagged);
    p->ndefaults = PyTuple_GET_SIZE(defaults);
    p->fields = PyMem_Calloc(p->nfields + 1, sizeof(FieldOp));
    p->tagged = PyMem_Calloc(p->ntagged + 1, sizeof(FieldOp));
    p->defaults = PyMem_Calloc(p->ndefaults + 1, sizeof(DefaultOp));
    if (!p->fields || !p->tagged || !p->defaults) {
        prog_free(p);
        return (Prog *)PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < p->nfields; i++) {
        if (op_build(PyTuple_GET_ITEM(ops, i), &p->fields[i]) < 0) { p->nfields = i; prog_free(p); return NULL; }
    }
    for (Py_ssize_t i = 0; i < p->ntagged; i++) {
        if (op_build(PyTuple_GET_ITEM(tagged, i), &p->tagged[i]) < 0) { p->ntagged = i; prog_free(p); return NULL; }
    }
    for (Py_ssize_t i = 0; i < p->ndefaults; i++) {
        PyObject *descr, *value;
        int how;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(defaults, i), "OiO", &descr, &how, &value)) { prog_free(p); return NULL; }
        p->defaults[i].offset = slot_offset(descr);
        if (p->defaults[i].offset < 0) { prog_free(p); return NULL; }
        p->defaults[i].how = how;
        p->defaults[i].value = value; /* kept alive by p->keep */
    }
    p->unknown_offset = -1;
    if (unknown != Py_None) {
        p->unknown_offset = slot_offset(unknown);
        if (p->unknown_offset < 0) { prog_free(p); return NULL; }
    }
    return p;
}

static void capsule_free(PyObject *capsule) {
    prog_free((Prog *)PyCapsule_GetPointer(capsule, "kconform.program"));
}

static PyObject *compile_program(PyObject *self, PyObject *spec) {
    Prog *p = prog_build(spec);
    if (p == NULL) return NULL;
    PyObject *capsule = PyCapsule_New(p, "kconform.program", capsule_free);
    if (capsule == NULL) prog_free(p);
    return capsule;
}

/* ---- reading ------------------------------------------------------------------------------------ */

#define NEED(r, n) do { if ((n) < 0 || (r)->len - (r)->pos < (Py_ssize_t)(n)) return -1; } while (0)

static inline int read_uvarint(Reader *r, uint64_t *out) {
    if (r->pos < r->len && r->b[r->pos] < 0x80) { *out = r->b[r->pos++]; return 0; } /* one byte: most */
    uint64_t v = 0;
    for (int shift = 0; shift < 35; shift += 7) {
        if (r->pos >= r->len) return -1;
        unsigned char c = r->b[r->pos++];
        v |= (uint64_t)(c & 0x7F) << shift;
        if (!(c & 0x80)) { *out = v; return 0; }
    }
    return -1;
}

static inline int64_t be(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v = (v << 8) | p[i];
    return (int64_t)v;
}

static int read_length(Reader *r, int compact, int wide, Py_ssize_t *n) {
    if (compact) {
        uint64_t v;
        if (read_uvarint(r, &v) < 0 || v > 0x7FFFFFFF) return -1;
        *n = (Py_ssize_t)v - 1;
        return 0;
    }
    if (wide) {
        NEED(r, 4);
        *n = (int32_t)be(r->b + r->pos, 4);
        r->pos += 4;
    } else {
        NEED(r, 2);
        *n = (int16_t)be(r->b + r->pos, 2);
        r->pos += 2;
    }
    return 0;
}

static PyObject *make_uuid(const unsigned char *p) {
    int zero = 1;
    for (int i = 0; i < 16; i++) if (p[i]) { zero = 0; break; }
    if (zero) { Py_INCREF(ZERO_UUID); return ZERO_UUID; }
    PyObject *value = _PyLong_FromByteArray(p, 16, 0, 0);
    if (value == NULL) return NULL;
    PyTypeObject *t = (PyTypeObject *)UUID_TYPE;
    PyObject *u = t->tp_alloc(t, 0);
    if (u == NULL) { Py_DECREF(value); return NULL; }
    *(PyObject **)((char *)u + UUID_INT_OFFSET) = value;
    Py_INCREF(SAFE_UNKNOWN);
    *(PyObject **)((char *)u + UUID_SAFE_OFFSET) = SAFE_UNKNOWN;
    return u;
}

static PyObject *decode_struct(Prog *p, Reader *r, int depth);

/* One value of kind op->kind (not an array). NULL without an exception set means "give up". */
static PyObject *decode_one(FieldOp *op, Reader *r, int nullable, int depth) {
    const unsigned char *b = r->b;
    Py_ssize_t n;
    switch (op->kind) {
    case K_BOOL:
        if (r->len - r->pos < 1) return NULL;
        return PyBool_FromLong(b[r->pos++] != 0);
    case K_INT8:
        if (r->len - r->pos < 1) return NULL;
        return PyLong_FromLong((int8_t)b[r->pos++]);
    case K_INT16:
        if (r->len - r->pos < 2) return NULL;
        r->pos += 2;
        return PyLong_FromLong((int16_t)be(b + r->pos - 2, 2));
    case K_UINT16:
        if (r->len - r->pos < 2) return NULL;
        r->pos += 2;
        return PyLong_FromLong((uint16_t)be(b + r->pos - 2, 2));
    case K_INT32:
        if (r->len - r->pos < 4) return NULL;
        r->pos += 4;
        return PyLong_FromLong((int32_t)be(b + r->pos - 4, 4));
    case K_UINT32:
        if (r->len - r->pos < 4) return NULL;
        r->pos += 4;
        return PyLong_FromUnsignedLong((uint32_t)be(b + r->pos - 4, 4));
    case K_INT64:
        if (r->len - r->pos < 8) return NULL;
        r->pos += 8;
        return PyLong_FromLongLong(be(b + r->pos - 8, 8));
    case K_FLOAT64: {
        if (r->len - r->pos < 8) return NULL;
        uint64_t bits = (uint64_t)be(b + r->pos, 8);
        double d;
        memcpy(&d, &bits, 8);
        r->pos += 8;
        return PyFloat_FromDouble(d);
    }
    case K_UUID:
        if (r->len - r->pos < 16) return NULL;
        r->pos += 16;
        return make_uuid(b + r->pos - 16);
    case K_STRING:
    case K_BYTES:
    case K_RECORDS: {
        if (read_length(r, op->compact, op->kind != K_STRING, &n) < 0) return NULL;
        if (n < 0) {
            if (!nullable || n != -1) return NULL;
            Py_RETURN_NONE;
        }
        if (op->kind == K_STRING && n > 0x7FFF) return NULL;
        if (r->len - r->pos < n) return NULL;
        Py_ssize_t start = r->pos;
        r->pos += n;
        if (op->kind == K_STRING) {
            PyObject *s = PyUnicode_DecodeUTF8((const char *)b + start, n, NULL);
            if (s == NULL) PyErr_Clear(); /* not UTF-8: the pure path names the field */
            return s;
        }
        if (op->kind == K_BYTES) return PyBytes_FromStringAndSize((const char *)b + start, n);
        /* records: a slice of the caller's memoryview, never a copy */
        PyObject *slice = PySlice_New(NULL, NULL, NULL);
        PyObject *lo = PyLong_FromSsize_t(start), *hi = PyLong_FromSsize_t(start + n);
        PyObject *result = NULL;
        if (slice && lo && hi) {
            Py_DECREF(slice);
            slice = PySlice_New(lo, hi, NULL);
            if (slice) result = PyObject_GetItem(r->bufobj, slice);
        }
        Py_XDECREF(slice);
        Py_XDECREF(lo);
        Py_XDECREF(hi);
        return result;
    }
    case K_STRUCT:
        if (nullable) {
            if (r->len - r->pos < 1) return NULL;
            if ((int8_t)b[r->pos++] < 0) Py_RETURN_NONE;
        }
        return decode_struct(op->sub, r, depth + 1);
    }
    return NULL;
}

static PyObject *decode_field(FieldOp *op, Reader *r, int depth) {
    if (!op->is_array) return decode_one(op, r, op->nullable, depth);
    Py_ssize_t n;
    if (read_length(r, op->compact, 1, &n) < 0) return NULL;
    if (n < 0) {
        if (!op->nullable || n != -1) return NULL;
        Py_RETURN_NONE;
    }
    if (n > r->len - r->pos) return NULL;
    PyObject *list = PyList_New(n);
    if (list == NULL) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = decode_one(op, r, 0, depth);
        if (item == NULL) { Py_DECREF(list); return NULL; }
        PyList_SET_ITEM(list, i, item);
    }
    return list;
}

static inline void set_slot(PyObject *obj, Py_ssize_t offset, PyObject *value) {
    PyObject **slot = (PyObject **)((char *)obj + offset);
    PyObject *old = *slot;
    *slot = value;
    Py_XDECREF(old);
}

static PyObject *decode_struct(Prog *p, Reader *r, int depth) {
    if (depth > 64) return NULL;
    PyObject *obj = p->cls->tp_alloc(p->cls, 0);
    if (obj == NULL) return NULL;
    for (Py_ssize_t i = 0; i < p->ndefaults; i++) {
        DefaultOp *d = &p->defaults[i];
        PyObject *v;
        if (d->how == D_LIST) v = PyList_New(0);
        else if (d->how == D_CALL) v = PyObject_CallNoArgs(d->value);
        else { v = d->value; Py_INCREF(v); }
        if (v == NULL) { Py_DECREF(obj); return NULL; }
        set_slot(obj, d->offset, v);
    }
    for (Py_ssize_t i = 0; i < p->nfields; i++) {
        PyObject *v = decode_field(&p->fields[i], r, depth);
        if (v == NULL) { Py_DECREF(obj); return NULL; }
        set_slot(obj, p->fields[i].offset, v);
    }
    PyObject *unknown = NULL;
    if (p->flexible) {
        uint64_t count;
        if (read_uvarint(r, &count) < 0 || count > (uint64_t)(r->len - r->pos)) { Py_DECREF(obj); return NULL; }
        for (uint64_t t = 0; t < count; t++) {
            uint64_t tag, size;
            if (read_uvarint(r, &tag) < 0 || read_uvarint(r, &size) < 0 || size > (uint64_t)(r->len - r->pos)) {
                Py_XDECREF(unknown); Py_DECREF(obj); return NULL;
            }
            Py_ssize_t start = r->pos;
            FieldOp *known = NULL;
            for (Py_ssize_t k = 0; k < p->ntagged; k++) {
                if ((uint64_t)p->tagged[k].tag == tag) { known = &p->tagged[k]; break; }
            }
            if (known != NULL) {
                PyObject *v = decode_field(known, r, depth);
                if (v == NULL || r->pos != start + (Py_ssize_t)size) {
                    Py_XDECREF(v); Py_XDECREF(unknown); Py_DECREF(obj); return NULL;
                }
                set_slot(obj, known->offset, v);
                continue;
            }
            if (unknown == NULL && (unknown = PyList_New(0)) == NULL) { Py_DECREF(obj); return NULL; }
            PyObject *pair = Py_BuildValue("(Ky#)", (unsigned long long)tag, r->b + start, (Py_ssize_t)size);
            r->pos = start + (Py_ssize_t)size;
            if (pair == NULL || PyList_Append(unknown, pair) < 0) {
                Py_XDECREF(pair); Py_DECREF(unknown); Py_DECREF(obj); return NULL;
            }
            Py_DECREF(pair);
        }
    }
    if (p->unknown_offset >= 0) {
        PyObject *t = unknown ? PyList_AsTuple(unknown) : PyTuple_New(0);
        Py_XDECREF(unknown);
        if (t == NULL) { Py_DECREF(obj); return NULL; }
        set_slot(obj, p->unknown_offset, t);
    } else {
        Py_XDECREF(unknown);
    }
    return obj;
}

/* decode(program, buffer, pos) -> (object, end) or None to let the pure-Python path decide */
static PyObject *decode(PyObject *self, PyObject *args) {
    PyObject *capsule, *bufobj;
    Py_ssize_t pos;
    if (!PyArg_ParseTuple(args, "OOn", &capsule, &bufobj, &pos)) return NULL;
    Prog *p = PyCapsule_GetPointer(capsule, "kconform.program");
    if (p == NULL) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(bufobj, &view, PyBUF_SIMPLE) < 0) return NULL;
    Reader r = {(const unsigned char *)view.buf, pos, view.len, bufobj};
    PyObject *result = NULL;
    if (pos >= 0 && pos <= view.len) {
        PyObject *obj = decode_struct(p, &r, 0);
        if (obj != NULL) {
            result = Py_BuildValue("(Nn)", obj, r.pos);
        } else if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_MemoryError)) {
            PyErr_Clear();
        }
    }
    PyBuffer_Release(&view);
    if (result == NULL && !PyErr_Occurred()) Py_RETURN_NONE;
    return result;
}

/* ---- records of a v2 batch --------------------------------------------------------------------- */

/* Zig-zag varlong of at most 10 bytes; gives up where the pure reader would produce more than 64 bits. */
static int read_varlong(Reader *r, int64_t *out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (r->pos >= r->len) return -1;
        unsigned char c = r->b[r->pos++];
        if (shift == 63 && (c & 0x7E)) return -1;
        v |= (uint64_t)(c & 0x7F) << shift;
        if (!(c & 0x80)) { *out = (int64_t)((v >> 1) ^ (~(v & 1) + 1)); return 0; }
    }
    return -1;
}

/* Zig-zag varint: at most 5 bytes, of which Kafka's readVarint (shifting into a Java int) and the
   pure reader keep the low 32 bits. */
static inline int read_varint(Reader *r, int64_t *out) {
    uint64_t v;
    if (read_uvarint(r, &v) < 0) return -1;
    uint32_t u = (uint32_t)v;
    *out = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
    return 0;
}

static inline int add_int64(int64_t a, int64_t b, int64_t *out) {
    if ((b > 0 && a > INT64_MAX - b) || (b < 0 && a < INT64_MIN - b)) return -1;
    *out = a + b;
    return 0;
}

static PyObject *nullable_bytes(Reader *r, Py_ssize_t n) {
    if (n == -1) Py_RETURN_NONE;
    if (n < -1 || r->len - r->pos < n) return NULL;
    PyObject *v = PyBytes_FromStringAndSize((const char *)r->b + r->pos, n);
    r->pos += n;
    return v;
}

/* read_records(record_class, buffer, pos, end, count, base_offset, base_timestamp, key_offsets)
 * -> list of records, or None if the bytes are not exactly ``count`` well-formed records.
 * key_offsets: the slot descriptors (offset, timestamp, key, value, headers). */
static PyObject *read_records(PyObject *self, PyObject *args) {
    PyObject *cls, *bufobj, *descrs;
    Py_ssize_t pos, end, count;
    long long base_offset, base_timestamp;
    if (!PyArg_ParseTuple(args, "OOnnnLLO!", &cls, &bufobj, &pos, &end, &count, &base_offset, &base_timestamp,
                          &PyTuple_Type, &descrs))
        return NULL;
    if (PyTuple_GET_SIZE(descrs) != 5 || !PyType_Check(cls)) {
        PyErr_SetString(PyExc_TypeError, "bad record layout");
        return NULL;
    }
    Py_ssize_t off[5];
    for (int i = 0; i < 5; i++) {
        off[i] = slot_offset(PyTuple_GET_ITEM(descrs, i));
        if (off[i] < 0) return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(bufobj, &view, PyBUF_SIMPLE) < 0) return NULL;
    PyObject *list = NULL;
    /* The last header key decoded and where its bytes are: records of a batch mostly repeat their header
     * keys, and an equal key shares the str already made (as equal as the pure path's own copies). */
    PyObject *last_key = NULL;
    const unsigned char *last_key_at = NULL;
    Py_ssize_t last_key_len = -1;
    if (pos < 0 || end > view.len || pos > end || count < 0 || count > (end - pos) / 7 + 1) goto give_up;
    Reader r = {(const unsigned char *)view.buf, pos, end, bufobj};
    list = PyList_New(count);
    if (list == NULL) goto done;
    PyTypeObject *t = (PyTypeObject *)cls;
    for (Py_ssize_t i = 0; i < count; i++) {
        int64_t length, ts_delta, offset_delta, klen, vlen, nheaders;
        if (read_varint(&r, &length) < 0 || length < 0 || length > r.len - r.pos) goto give_up_list;
        Py_ssize_t rec_end = r.pos + (Py_ssize_t)length;
        Reader rr = {r.b, r.pos, rec_end, bufobj};
        if (rr.pos >= rr.len) goto give_up_list;
        rr.pos += 1; /* attributes */
        if (read_varlong(&rr, &ts_delta) < 0 || read_varint(&rr, &offset_delta) < 0) goto give_up_list;
        if (read_varint(&rr, &klen) < 0) goto give_up_list;
        PyObject *key = nullable_bytes(&rr, (Py_ssize_t)klen);
        if (key == NULL) goto give_up_list;
        if (read_varint(&rr, &vlen) < 0) { Py_DECREF(key); goto give_up_list; }
        PyObject *value = nullable_bytes(&rr, (Py_ssize_t)vlen);
        if (value == NULL) { Py_DECREF(key); goto give_up_list; }
        PyObject *headers = NULL;
        if (read_varint(&rr, &nheaders) < 0 || nheaders < 0 || nheaders > rr.len - rr.pos ||
            (headers = PyList_New((Py_ssize_t)nheaders)) == NULL) {
            Py_DECREF(key); Py_DECREF(value); goto give_up_list;
        }
        for (int64_t h = 0; h < nheaders; h++) {
            int64_t hklen, hvlen;
            PyObject *hk = NULL, *hv = NULL, *pair = NULL;
            if (read_varint(&rr, &hklen) < 0 || hklen < 0 || hklen > rr.len - rr.pos) goto bad_header;
            const unsigned char *at = rr.b + rr.pos;
            if (last_key != NULL && hklen == last_key_len && memcmp(at, last_key_at, (size_t)hklen) == 0) {
                hk = Py_NewRef(last_key);
            } else {
                hk = PyUnicode_DecodeUTF8((const char *)at, (Py_ssize_t)hklen, NULL);
                if (hk == NULL) { PyErr_Clear(); goto bad_header; }
                Py_XSETREF(last_key, Py_NewRef(hk));
                last_key_at = at;
                last_key_len = (Py_ssize_t)hklen;
            }
            rr.pos += (Py_ssize_t)hklen;
            if (read_varint(&rr, &hvlen) < 0) goto bad_header;
            hv = nullable_bytes(&rr, (Py_ssize_t)hvlen);
            if (hv == NULL) goto bad_header;
            pair = PyTuple_New(2);
            if (pair == NULL) {
                Py_DECREF(hk); Py_DECREF(hv);
                Py_DECREF(key); Py_DECREF(value); Py_DECREF(headers); goto give_up_list;
            }
            PyTuple_SET_ITEM(pair, 0, hk);
            PyTuple_SET_ITEM(pair, 1, hv);
            PyList_SET_ITEM(headers, (Py_ssize_t)h, pair);
            continue;
        bad_header:
            Py_XDECREF(hk); Py_XDECREF(hv);
            Py_DECREF(key); Py_DECREF(value); Py_DECREF(headers);
            goto give_up_list;
        }
        if (rr.pos != rec_end) { Py_DECREF(key); Py_DECREF(value); Py_DECREF(headers); goto give_up_list; }
        int64_t offset, timestamp; /* beyond an int64 the pure path makes the big ints */
        if (add_int64(base_offset, offset_delta, &offset) < 0 ||
            add_int64(base_timestamp, ts_delta, &timestamp) < 0) {
            Py_DECREF(key); Py_DECREF(value); Py_DECREF(headers); goto give_up_list;
        }
        r.pos = rec_end;
        PyObject *rec = t->tp_alloc(t, 0);
        PyObject *o = PyLong_FromLongLong(offset);
        PyObject *ts = PyLong_FromLongLong(timestamp);
        if (rec == NULL || o == NULL || ts == NULL) {
            Py_XDECREF(rec); Py_XDECREF(o); Py_XDECREF(ts);
            Py_DECREF(key); Py_DECREF(value); Py_DECREF(headers);
            Py_DECREF(list); list = NULL;
            goto done;
        }
        set_slot(rec, off[0], o);
        set_slot(rec, off[1], ts);
        set_slot(rec, off[2], key);
        set_slot(rec, off[3], value);
        set_slot(rec, off[4], headers);
        PyList_SET_ITEM(list, i, rec);
    }
    if (r.pos != end) goto give_up_list;
    goto done;
give_up_list:
    Py_XDECREF(list);
give_up:
    Py_XDECREF(last_key);
    if (PyErr_Occurred()) PyErr_Clear();
    PyBuffer_Release(&view);
    Py_RETURN_NONE;
done:
    Py_XDECREF(last_key);
    PyBuffer_Release(&view);
    return list;
}

/* ---- writing the records of a v2 batch --------------------------------------------------------- */

/* The encoder below writes what records.py's pure-Python encoder writes, byte for byte, for the inputs
 * it takes: records of exactly the record class, ints that fit an int64, keys and values None, bytes
 * or bytearray, headers None or a list or tuple of (str, None | bytes | bytearray) pairs. On anything
 * else it gives up (returns None, no exception) and the pure path encodes the input or raises its
 * exact error. Each record is sized from its fields, then written, every write bounds-checked. No Python
 * code runs meanwhile (exact types only, no __index__ or __len__), so the fields cannot change. */

typedef struct {
    unsigned char *p, *end;
} Writer;

/* A record's fields, as the encoder takes them. key_len / value_len are -1 for None. */
typedef struct {
    int64_t offset_delta, timestamp_delta;
    const char *key, *value;
    Py_ssize_t key_len, value_len;
    PyObject *headers;  /* a non-empty list or tuple, or NULL for none */
    Py_ssize_t size;    /* the record without its length prefix */
} RecordParts;

#define ADD_SIZE(total, n) do { if ((n) < 0 || (total) > PY_SSIZE_T_MAX - (n)) return -1; (total) += (n); } while (0)

static inline uint64_t zigzag(int64_t v) {
    uint64_t u = (uint64_t)v;
    return (u << 1) ^ (0 - (u >> 63));
}

static inline Py_ssize_t varint_size(uint64_t v) {
    Py_ssize_t n = 1;
    while (v >= 0x80) { v >>= 7; n++; }
    return n;
}

static inline int put_varint(Writer *w, uint64_t v) {
    if (w->end - w->p < varint_size(v)) return -1;
    while (v >= 0x80) { *w->p++ = (unsigned char)(v | 0x80); v >>= 7; }
    *w->p++ = (unsigned char)v;
    return 0;
}

static inline int put_bytes(Writer *w, const char *data, Py_ssize_t n) {
    if (n <= 0) return 0;
    if (w->end - w->p < n) return -1;
    memcpy(w->p, data, (size_t)n);
    w->p += n;
    return 0;
}

/* An int (or bool) that fits an int64. Not other int subclasses: their arithmetic may be their own. */
static int as_int64(PyObject *o, int64_t *out) {
    if (o == NULL || !(PyLong_CheckExact(o) || PyBool_Check(o))) return -1;
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow || (v == -1 && PyErr_Occurred())) { PyErr_Clear(); return -1; }
    *out = (int64_t)v;
    return 0;
}

static inline int sub_int64(int64_t a, int64_t b, int64_t *out) {
    if ((b > 0 && a < INT64_MIN + b) || (b < 0 && a > INT64_MAX + b)) return -1;
    *out = a - b;
    return 0;
}

/* None, bytes or bytearray (exact types: a subclass may measure itself differently). */
static inline int nullable_data(PyObject *o, const char **data, Py_ssize_t *n) {
    if (o == Py_None) { *data = NULL; *n = -1; return 0; }
    if (PyBytes_CheckExact(o)) { *data = PyBytes_AS_STRING(o); *n = PyBytes_GET_SIZE(o); return 0; }
    if (PyByteArray_CheckExact(o)) { *data = PyByteArray_AS_STRING(o); *n = PyByteArray_GET_SIZE(o); return 0; }
    return -1;
}

/* The pair at headers[i]: its key's UTF-8 and its value. */
static int header_parts(PyObject *headers, Py_ssize_t i, const char **key, Py_ssize_t *key_len,
                        const char **value, Py_ssize_t *value_len) {
    PyObject *pair = PySequence_Fast_ITEMS(headers)[i];
    if (!(PyTuple_CheckExact(pair) || PyList_CheckExact(pair)) || PySequence_Fast_GET_SIZE(pair) != 2) return -1;
    PyObject *k = PySequence_Fast_ITEMS(pair)[0];
    if (!PyUnicode_CheckExact(k)) return -1;
    *key = PyUnicode_AsUTF8AndSize(k, key_len); /* cached in the str: sizing and writing share it */
    if (*key == NULL) { PyErr_Clear(); return -1; } /* lone surrogates: the pure path raises */
    return nullable_data(PySequence_Fast_ITEMS(pair)[1], value, value_len);
}

static Py_ssize_t nullable_size(Py_ssize_t n) {
    return varint_size(zigzag(n)) + (n > 0 ? n : 0);
}

/* Fill in a record's sizes from its fields; -1 to give up. */
static int record_size(RecordParts *r) {
    Py_ssize_t size = 1 + varint_size(zigzag(r->timestamp_delta)) + varint_size(zigzag(r->offset_delta));
    ADD_SIZE(size, nullable_size(r->key_len));
    ADD_SIZE(size, nullable_size(r->value_len));
    if (r->headers == NULL) {
        ADD_SIZE(size, 1);
    } else {
        Py_ssize_t count = PySequence_Fast_GET_SIZE(r->headers);
        ADD_SIZE(size, varint_size(zigzag(count)));
        for (Py_ssize_t i = 0; i < count; i++) {
            const char *k, *v;
            Py_ssize_t klen, vlen;
            if (header_parts(r->headers, i, &k, &klen, &v, &vlen) < 0) return -1;
            ADD_SIZE(size, nullable_size(klen));
            ADD_SIZE(size, nullable_size(vlen));
        }
    }
    r->size = size;
    return 0;
}

static int put_nullable(Writer *w, const char *data, Py_ssize_t n) {
    if (put_varint(w, zigzag(n)) < 0) return -1;
    return put_bytes(w, data, n);
}

/* One record, length prefix included, as record_size measured it. */
static int put_record(Writer *w, RecordParts *r) {
    if (put_varint(w, zigzag(r->size)) < 0 || w->p == w->end) return -1;
    *w->p++ = 0; /* attributes */
    if (put_varint(w, zigzag(r->timestamp_delta)) < 0 || put_varint(w, zigzag(r->offset_delta)) < 0 ||
        put_nullable(w, r->key, r->key_len) < 0 || put_nullable(w, r->value, r->value_len) < 0)
        return -1;
    if (r->headers == NULL) return put_varint(w, 0);
    Py_ssize_t count = PySequence_Fast_GET_SIZE(r->headers);
    if (put_varint(w, zigzag(count)) < 0) return -1;
    for (Py_ssize_t i = 0; i < count; i++) {
        const char *k, *v;
        Py_ssize_t klen, vlen;
        if (header_parts(r->headers, i, &k, &klen, &v, &vlen) < 0 || put_nullable(w, k, klen) < 0 ||
            put_nullable(w, v, vlen) < 0)
            return -1;
    }
    return 0;
}

/* key, value and headers into r; -1 to give up. Falsy headers (None, empty) mean none, as in Python. */
static int record_payload(RecordParts *r, PyObject *key, PyObject *value, PyObject *headers) {
    if (key == NULL || value == NULL || headers == NULL) return -1; /* an unset slot */
    if (nullable_data(key, &r->key, &r->key_len) < 0 || nullable_data(value, &r->value, &r->value_len) < 0)
        return -1;
    if (headers == Py_None) {
        r->headers = NULL;
    } else if (PyList_CheckExact(headers) || PyTuple_CheckExact(headers)) {
        r->headers = PySequence_Fast_GET_SIZE(headers) ? headers : NULL;
    } else {
        return -1;
    }
    return record_size(r);
}

/* encode_record(offset_delta, timestamp_delta, key, value, headers) -> bytes, or None to let the pure
 * path decide. METH_FASTCALL: a producer calls it once per record. */
static PyObject *encode_record(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "encode_record takes 5 arguments");
        return NULL;
    }
    RecordParts r;
    if (as_int64(args[0], &r.offset_delta) < 0 || as_int64(args[1], &r.timestamp_delta) < 0 ||
        record_payload(&r, args[2], args[3], args[4]) < 0)
        Py_RETURN_NONE;
    if (r.size > PY_SSIZE_T_MAX - 10) Py_RETURN_NONE; /* a length prefix takes at most 10 bytes */
    Py_ssize_t total = r.size + varint_size(zigzag(r.size));
    PyObject *out = PyBytes_FromStringAndSize(NULL, total);
    if (out == NULL) return NULL;
    Writer w = {(unsigned char *)PyBytes_AS_STRING(out), (unsigned char *)PyBytes_AS_STRING(out) + total};
    if (put_record(&w, &r) < 0 || w.p != w.end) { Py_DECREF(out); Py_RETURN_NONE; }
    return out;
}

/* Fields of records[i] (exactly of the record class) against the batch so far; -1 to give up, which is
 * also where the pure path raises (offsets not increasing, an offset delta beyond an int32). */
static int batch_record(PyObject *rec, PyTypeObject *cls, const Py_ssize_t *off, int64_t base_offset,
                        int have_first, int64_t first_timestamp, int64_t last_delta, int64_t *timestamp,
                        RecordParts *r) {
    if (Py_TYPE(rec) != cls) return -1;
    PyObject **slots[5];
    for (int k = 0; k < 5; k++) slots[k] = (PyObject **)((char *)rec + off[k]);
    int64_t offset;
    if (as_int64(*slots[0], &offset) < 0 || as_int64(*slots[1], timestamp) < 0) return -1;
    if (sub_int64(offset, base_offset, &r->offset_delta) < 0 || r->offset_delta <= last_delta ||
        r->offset_delta > 0x7FFFFFFF)
        return -1;
    if (sub_int64(*timestamp, have_first ? first_timestamp : *timestamp, &r->timestamp_delta) < 0) return -1;
    return record_payload(r, *slots[2], *slots[3], *slots[4]);
}

#define ENCODE_GUESS_LIMIT ((Py_ssize_t)1 << 24) /* the most a batch's buffer starts with */

/* encode_records(records, record_class, slot_descriptors, base_offset, base_timestamp)
 * -> (records section as a bytearray, count, last_offset_delta, first_timestamp, max_timestamp) or None.
 * records: a list or tuple; base_timestamp: an int, or None for the first record's timestamp. The
 * values are those the pure loop leaves: -1, None (or base_timestamp) and -1 when there are none. */
static PyObject *encode_records(PyObject *self, PyObject *args) {
    PyObject *records, *cls, *descrs, *base_offset_obj, *base_timestamp_obj;
    if (!PyArg_ParseTuple(args, "OOO!OO", &records, &cls, &PyTuple_Type, &descrs, &base_offset_obj,
                          &base_timestamp_obj))
        return NULL;
    if (PyTuple_GET_SIZE(descrs) != 5 || !PyType_Check(cls)) {
        PyErr_SetString(PyExc_TypeError, "bad record layout");
        return NULL;
    }
    Py_ssize_t off[5];
    for (int i = 0; i < 5; i++) {
        off[i] = slot_offset(PyTuple_GET_ITEM(descrs, i));
        if (off[i] < 0) return NULL;
    }
    int64_t base_offset, first_timestamp = 0;
    int have_first = base_timestamp_obj != Py_None;
    if (!(PyList_CheckExact(records) || PyTuple_CheckExact(records)) ||
        as_int64(base_offset_obj, &base_offset) < 0 ||
        (have_first && as_int64(base_timestamp_obj, &first_timestamp) < 0))
        Py_RETURN_NONE;
    PyTypeObject *t = (PyTypeObject *)cls;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(records);
    PyObject **items = PySequence_Fast_ITEMS(records);
    int64_t last_delta = -1, max_timestamp = -1, first = first_timestamp, timestamp;
    int first_known = have_first;
    /* One pass, each record checked and sized and then written; the buffer grows by doubling from a
     * guess of count times the first record's size, and is cut to what was written at the end. */
    PyObject *out = PyByteArray_FromStringAndSize(NULL, 0);
    if (out == NULL) return NULL;
    Py_ssize_t used = 0, capacity = 0;
    RecordParts r;
    for (Py_ssize_t i = 0; i < count; i++) {
        if (batch_record(items[i], t, off, base_offset, first_known, first, last_delta, &timestamp, &r) < 0)
            goto give_up;
        if (!first_known) { first = timestamp; first_known = 1; }
        if (timestamp > max_timestamp) max_timestamp = timestamp;
        last_delta = r.offset_delta;
        if (r.size > PY_SSIZE_T_MAX - 10) goto give_up;
        Py_ssize_t n = r.size + varint_size(zigzag(r.size));
        if (n > capacity - used) {
            Py_ssize_t grown;
            if (i == 0) /* every record as large as the first, up to a bound */
                grown = count <= ENCODE_GUESS_LIMIT / n ? n * count : Py_MAX(n, ENCODE_GUESS_LIMIT);
            else
                grown = capacity <= PY_SSIZE_T_MAX / 2 ? capacity * 2 : PY_SSIZE_T_MAX;
            if (grown - used < n) {
                if (used > PY_SSIZE_T_MAX - n) goto give_up;
                grown = used + n;
            }
            if (PyByteArray_Resize(out, grown) < 0) { Py_DECREF(out); return NULL; }
            capacity = grown;
        }
        unsigned char *at = (unsigned char *)PyByteArray_AS_STRING(out) + used;
        Writer w = {at, at + n};
        if (put_record(&w, &r) < 0 || w.p != w.end) goto give_up;
        used += n;
    }
    if (PyByteArray_Resize(out, used) < 0) { Py_DECREF(out); return NULL; }
    if (!first_known)
        return Py_BuildValue("(NnLOL)", out, count, (long long)last_delta, Py_None, (long long)max_timestamp);
    return Py_BuildValue("(NnLLL)", out, count, (long long)last_delta, (long long)first,
                         (long long)max_timestamp);
give_up:
    Py_DECREF(out);
    if (PyErr_Occurred()) PyErr_Clear();
    Py_RETURN_NONE;
}

/* ---- module ------------------------------------------------------------------------------------- */

static PyObject *configure(PyObject *self, PyObject *args) {
    PyObject *uuid_type, *zero, *safe, *int_descr, *safe_descr;
    if (!PyArg_ParseTuple(args, "OOOOO", &uuid_type, &zero, &safe, &int_descr, &safe_descr)) return NULL;
    Py_ssize_t a = slot_offset(int_descr), b = slot_offset(safe_descr);
    if (a < 0 || b < 0) return NULL;
    Py_XSETREF(UUID_TYPE, Py_NewRef(uuid_type));
    Py_XSETREF(ZERO_UUID, Py_NewRef(zero));
    Py_XSETREF(SAFE_UNKNOWN, Py_NewRef(safe));
    UUID_INT_OFFSET = a;
    UUID_SAFE_OFFSET = b;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"compile_program", compile_program, METH_O, "Compile a decoding program from its tuple form."},
    {"decode", decode, METH_VARARGS, "decode(program, buffer, pos) -> (object, end) or None."},
    {"read_records", read_records, METH_VARARGS, "Decode the records of a v2 batch, or None."},
    {"encode_record", (PyCFunction)(void (*)(void))encode_record, METH_FASTCALL,
     "encode_record(offset_delta, timestamp_delta, key, value, headers) -> one v2 record, or None."},
    {"encode_records", encode_records, METH_VARARGS, "Encode the records of a v2 batch, or None."},
    {"configure", configure, METH_VARARGS, "Tell the module about uuid.UUID."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_speedups", NULL, -1, methods};

PyMODINIT_FUNC PyInit__speedups(void) { return PyModule_Create(&module); }
