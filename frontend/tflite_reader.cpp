// tflite_reader.cpp — the TFLite flatbuffer reader behind tflite_reader.h:
// flatbuffers' Verifier checks every offset, vector and string of the file
// against its length (and the nesting depth and table count against its
// limits) before one field is read, then the generated accessors copy what
// the importer needs into plain C structs.  Built without exceptions: an
// allocation that fails ends the process with a message, as ax_die does.
#include "tflite_reader.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "tflite_schema_generated.h"

namespace {

void *zalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p) {
        fputs("axc: out of memory\n", stderr);
        abort();
    }
    return p;
}

bool fail(tfl_model *m, const char *why)
{
    snprintf(m->error, sizeof m->error, "%s", why);
    return false;
}

// A vector's elements copied out byte-wise: the Verifier checks a vector's
// start for 4-byte alignment only, so an 8-byte element (zero_point's
// int64) may lie misaligned, which Vector::Get would read as undefined
// behaviour (the file is little-endian, as the machines axc runs on).
template <typename T, typename V>
const T *copy_vector(const flatbuffers::Vector<V> *v, int *n)
{
    *n = v ? (int)v->size() : 0;
    T *out = (T *)zalloc((size_t)*n, sizeof(T));
    for (int i = 0; i < *n; i++) {
        V e;
        memcpy(&e, v->Data() + (size_t)i * sizeof(V), sizeof(V));
        out[i] = (T)e;
    }
    return out;
}

void read_quant(const tflite::QuantizationParameters *q, tfl_tensor *t)
{
    if (!q) return;
    t->scale = copy_vector<float>(q->scale(), &t->nscale);
    t->zero_point = copy_vector<int64_t>(q->zero_point(), &t->nzp);
    t->qdim = q->quantized_dimension();
    t->custom_quant = q->details_type() != tflite::QuantizationDetails_NONE;
}

void read_tensor(const tflite::Tensor *src, tfl_tensor *t)
{
    t->name = src->name() ? src->name()->c_str() : "";
    t->type = src->type();
    t->buffer = src->buffer();
    const flatbuffers::Vector<int32_t> *shape = src->shape();
    const int rank = shape ? (int)shape->size() : 0;
    t->rank = rank > TFL_MAX_SHAPE ? -1 : rank;
    for (int d = 0; d < rank && d < TFL_MAX_SHAPE; d++) t->shape[d] = shape->Get((flatbuffers::uoffset_t)d);
    const flatbuffers::Vector<int32_t> *sig = src->shape_signature();
    for (flatbuffers::uoffset_t d = 0; sig && d < sig->size(); d++) t->dynamic |= sig->Get(d) < 0;
    t->sparse = src->sparsity() != nullptr;
    t->variable = src->is_variable();
    read_quant(src->quantization(), t);
}

template <typename O>
void window(const O *o, tfl_options *r)
{
    r->padding = o->padding();
    r->stride_w = o->stride_w();
    r->stride_h = o->stride_h();
    r->act = o->fused_activation_function();
}

void read_options(const tflite::Operator *op, tfl_options *r)
{
    r->type = op->builtin_options_type();
    r->stride_w = r->stride_h = r->dilation_w = r->dilation_h = 1;
    r->beta = 1.0f;
    if (const auto *o = op->builtin_options_as_Conv2DOptions()) {
        window(o, r);
        r->dilation_w = o->dilation_w_factor();
        r->dilation_h = o->dilation_h_factor();
    } else if (const auto *d = op->builtin_options_as_DepthwiseConv2DOptions()) {
        window(d, r);
        r->dilation_w = d->dilation_w_factor();
        r->dilation_h = d->dilation_h_factor();
        r->depth_multiplier = d->depth_multiplier();
    } else if (const auto *p = op->builtin_options_as_Pool2DOptions()) {
        window(p, r);
        r->filter_w = p->filter_width();
        r->filter_h = p->filter_height();
    } else if (const auto *f = op->builtin_options_as_FullyConnectedOptions()) {
        r->act = f->fused_activation_function();
        r->keep_dims = f->keep_num_dims();
        r->weights_format = f->weights_format();
    } else if (const auto *s = op->builtin_options_as_SoftmaxOptions()) {
        r->beta = s->beta();
    } else if (const auto *c = op->builtin_options_as_ConcatenationOptions()) {
        r->axis = c->axis();
        r->act = c->fused_activation_function();
    } else if (const auto *a = op->builtin_options_as_AddOptions()) {
        r->act = a->fused_activation_function();
    } else if (const auto *mu = op->builtin_options_as_MulOptions()) {
        r->act = mu->fused_activation_function();
    } else if (const auto *re = op->builtin_options_as_ReducerOptions()) {
        r->keep_dims = re->keep_dims();
    }
}

void read_op(const tflite::Operator *src, tfl_op *o)
{
    o->opcode_index = src->opcode_index();
    o->inputs = (int32_t *)copy_vector<int32_t>(src->inputs(), &o->ninputs);
    o->outputs = (int32_t *)copy_vector<int32_t>(src->outputs(), &o->noutputs);
    read_options(src, &o->opt);
}

// Buffer data: inside the flatbuffer, or (models over 2 GB) at offset from
// the file's start, which must lie within the file.
bool read_buffer(const tflite::Buffer *b, const uint8_t *file, size_t len, tfl_buffer *out)
{
    if (b && b->data() && b->data()->size()) {
        out->data = b->data()->data();
        out->size = b->data()->size();
    } else if (b && b->offset() > 1) {
        if (b->offset() > len || b->size() > len - b->offset()) return false;
        out->data = file + b->offset();
        out->size = b->size();
    }
    return true;
}

bool read_subgraph(const tflite::SubGraph *sg, tfl_model *m)
{
    const auto *tensors = sg->tensors();
    m->ntensors = tensors ? (int)tensors->size() : 0;
    m->tensors = (tfl_tensor *)zalloc((size_t)m->ntensors, sizeof(tfl_tensor));
    for (int i = 0; i < m->ntensors; i++) read_tensor(tensors->Get((flatbuffers::uoffset_t)i), &m->tensors[i]);
    const auto *ops = sg->operators();
    m->nops = ops ? (int)ops->size() : 0;
    m->ops = (tfl_op *)zalloc((size_t)m->nops, sizeof(tfl_op));
    for (int i = 0; i < m->nops; i++) read_op(ops->Get((flatbuffers::uoffset_t)i), &m->ops[i]);
    m->inputs = (int32_t *)copy_vector<int32_t>(sg->inputs(), &m->ninputs);
    m->outputs = (int32_t *)copy_vector<int32_t>(sg->outputs(), &m->noutputs);
    return true;
}

} // namespace

extern "C" bool tfl_has_identifier(const void *bytes, size_t len)
{
    return len >= 8 && tflite::ModelBufferHasIdentifier(bytes);
}

extern "C" bool tfl_read(const void *bytes, size_t len, tfl_model *m)
{
    memset(m, 0, sizeof *m);
    const uint8_t *buf = (const uint8_t *)bytes;
    if (!tfl_has_identifier(bytes, len))
        return fail(m, "not a TFLite model (no \"TFL3\" file identifier at bytes 4..7)");
    if (len >= FLATBUFFERS_MAX_BUFFER_SIZE) return fail(m, "larger than a flatbuffer can be (2 GiB)");
    flatbuffers::Verifier verifier(buf, len);
    if (!tflite::VerifyModelBuffer(verifier))
        return fail(m, "the flatbuffer fails verification (truncated or corrupt: an offset, vector or "
                       "string outside the file, or nesting past the verifier's limits)");
    const tflite::Model *model = tflite::GetModel(buf);
    m->version = model->version();
    const auto *subgraphs = model->subgraphs();
    m->nsubgraphs = subgraphs ? (int)subgraphs->size() : 0;
    if (m->nsubgraphs < 1) return fail(m, "the model has no subgraph");
    const auto *codes = model->operator_codes();
    m->nopcodes = codes ? (int)codes->size() : 0;
    m->opcodes = (tfl_opcode *)zalloc((size_t)m->nopcodes, sizeof(tfl_opcode));
    for (int i = 0; i < m->nopcodes; i++) {
        const tflite::OperatorCode *c = codes->Get((flatbuffers::uoffset_t)i);
        const int32_t old = c->deprecated_builtin_code(), now = c->builtin_code();
        m->opcodes[i].builtin = old > now ? old : now;
        m->opcodes[i].custom = c->custom_code() ? c->custom_code()->c_str() : nullptr;
        m->opcodes[i].version = c->version();
    }
    const auto *buffers = model->buffers();
    m->nbuffers = buffers ? (int)buffers->size() : 0;
    m->buffers = (tfl_buffer *)zalloc((size_t)m->nbuffers, sizeof(tfl_buffer));
    for (int i = 0; i < m->nbuffers; i++)
        if (!read_buffer(buffers->Get((flatbuffers::uoffset_t)i), buf, len, &m->buffers[i])) {
            snprintf(m->error, sizeof m->error, "buffer %d lies past the end of the file (offset and size)", i);
            return false;
        }
    return read_subgraph(subgraphs->Get(0), m);
}

extern "C" void tfl_free(tfl_model *m)
{
    for (int i = 0; i < m->ntensors; i++) {
        free((void *)m->tensors[i].scale);
        free((void *)m->tensors[i].zero_point);
    }
    for (int i = 0; i < m->nops; i++) {
        free(m->ops[i].inputs);
        free(m->ops[i].outputs);
    }
    free(m->tensors);
    free(m->ops);
    free(m->inputs);
    free(m->outputs);
    free(m->opcodes);
    free(m->buffers);
    memset(m, 0, sizeof *m);
}
