// SPDX-License-Identifier: GPL-3.0-or-later
// Memory for the asynchronous operations of one listener thread, recycled
// from operation to operation. Asio allocates a block for every operation it
// starts (the handler and the operation's state) and keeps one block per
// thread for the next; a proxied request has an upstream timer waiting while
// a read or a write is under way, so that one block is taken and every
// request cost malloc and free calls. Here each size class keeps a free list
// of its own: once warm, starting an operation allocates nothing.
//
// Not thread-safe, and need not be: a thread's io_context runs on that
// thread alone (Listener.cpp), so its operations start and end there. When
// the io_context is destroyed with operations still pending, their blocks
// come back here too, so this must outlive the io_context (ThreadContext
// declares it first).
#pragma once

#include "http/HandlerClock.h"

#include <array>
#include <cstddef>
#include <new>
#include <utility>

namespace Floodgate::Http {

class HandlerMemory {
public:
    HandlerMemory() = default;
    HandlerMemory(const HandlerMemory&) = delete;
    HandlerMemory& operator=(const HandlerMemory&) = delete;
    ~HandlerMemory()
    {
        for (Block*& head : m_free)
            while (head) {
                Block* next = head->next;
                ::operator delete(head);
                head = next;
            }
    }

    void* allocate(std::size_t size)
    {
        const std::size_t c = sizeClass(size);
        if (c >= Classes)
            return ::operator new(size);
        if (Block* b = m_free[c]) {
            m_free[c] = b->next;
            return b;
        }
        return ::operator new((c + 1) * Granule);
    }

    void deallocate(void* p, std::size_t size) noexcept
    {
        const std::size_t c = sizeClass(size);
        if (c >= Classes) {
            ::operator delete(p);
            return;
        }
        m_free[c] = new (p) Block{m_free[c]};
    }

private:
    // Blocks of 64, 128, ... 1024 bytes: every operation the listener starts
    // fits (a few hundred bytes); anything larger goes to the heap as usual.
    static constexpr std::size_t Granule = 64;
    static constexpr std::size_t Classes = 16;
    static std::size_t sizeClass(std::size_t size) { return size == 0 ? 0 : (size - 1) / Granule; }

    struct Block {
        Block* next;
    };
    std::array<Block*, Classes> m_free{};
};

// The allocator Asio finds on a handler (its associated allocator) and
// allocates the operation's block with.
template<class T>
class HandlerAllocator {
public:
    using value_type = T;

    explicit HandlerAllocator(HandlerMemory& memory) noexcept : m_memory(&memory) {}
    template<class U>
    HandlerAllocator(const HandlerAllocator<U>& other) noexcept : m_memory(other.memory())
    {
    }

    T* allocate(std::size_t n) { return static_cast<T*>(m_memory->allocate(n * sizeof(T))); }
    void deallocate(T* p, std::size_t n) noexcept { m_memory->deallocate(p, n * sizeof(T)); }
    HandlerMemory* memory() const noexcept { return m_memory; }

    template<class U>
    bool operator==(const HandlerAllocator<U>& other) const noexcept
    {
        return m_memory == other.memory();
    }
    template<class U>
    bool operator!=(const HandlerAllocator<U>& other) const noexcept
    {
        return m_memory != other.memory();
    }

private:
    HandlerMemory* m_memory;
};

// A completion handler that allocates from a thread's HandlerMemory and,
// while it runs, reads the thread's HandlerClock at most once per kind of time:
// `socket.async_read_some(buffer, Recycled(memory, clock, [..](error_code, std::size_t) {..}))`.
template<class Handler>
class Recycled {
public:
    using allocator_type = HandlerAllocator<void>;

    Recycled(HandlerMemory& memory, HandlerClock& clock, Handler handler) : m_memory(&memory), m_clock(&clock), m_handler(std::move(handler)) {}

    allocator_type get_allocator() const noexcept { return allocator_type(*m_memory); }

    template<class... Args>
    void operator()(Args&&... args)
    {
        const HandlerClock::Handling handling(*m_clock);
        m_handler(std::forward<Args>(args)...);
    }

private:
    HandlerMemory* m_memory;
    HandlerClock* m_clock;
    Handler m_handler;
};

} // namespace Floodgate::Http
